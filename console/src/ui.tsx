import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { messageOf } from './session';

/** What openapi-fetch answers. */
export interface Answered<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/**
 * An action's state: running, and the API's own message when it was refused, to show next to the
 * control that started it.
 */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const run = useCallback(
    async <T,>(work: () => Promise<Answered<T>>, done?: (data: T) => string | undefined) => {
      setBusy(true);
      setError(null);
      setNote(null);
      try {
        const { data, error: refused, response } = await work();
        if (!response.ok) {
          setError(messageOf(refused, response.status));
          return;
        }
        const said = done?.(data as T);
        if (typeof said === 'string') setNote(said);
      } catch (thrown) {
        setError(`The request did not reach the service: ${(thrown as Error).message}`);
      } finally {
        setBusy(false);
      }
    },
    [],
  );
  return { busy, error, note, run, setError, setNote };
}

/** A refusal or a result, beside its control; announced to screen readers. */
export function Feedback({ error, note }: { error: string | null; note?: string | null }) {
  if (error) {
    return (
      <p class="error" role="alert">
        {error}
      </p>
    );
  }
  if (note) {
    return (
      <p class="note" role="status">
        {note}
      </p>
    );
  }
  return null;
}

/** A labelled control: the label is visible and names the control. */
export function Field({
  label,
  children,
  wide,
}: {
  label: string;
  children: ComponentChildren;
  wide?: boolean;
}) {
  return (
    // biome-ignore lint/a11y/noLabelWithoutControl: the control is the children, inside the label
    <label class={wide ? 'field wide' : 'field'}>
      <span>{label}</span>
      {children}
    </label>
  );
}

/** A bar with role progressbar; `now` undefined: running, of unknown length. */
export function Progress({
  label,
  now,
  max,
  text,
}: {
  label: string;
  now: number | undefined;
  max: number;
  text: string;
}) {
  const share = now === undefined || max === 0 ? (now === undefined ? 0 : 1) : Math.min(1, now / max);
  return (
    <div class="progress">
      <span class="progress-label">
        {label}: {text}
      </span>
      <div
        class={now === undefined ? 'bar indeterminate' : 'bar'}
        role="progressbar"
        aria-label={label}
        aria-valuemin={0}
        aria-valuemax={max}
        aria-valuenow={now}
        aria-valuetext={text}
      >
        <div class="fill" style={now === undefined ? undefined : { width: `${Math.round(share * 100)}%` }} />
      </div>
    </div>
  );
}

/** Calls `load` now and every `ms` while the page shows it (and `active` holds). */
export function usePoll(load: () => Promise<void>, ms: number, active = true, deps: unknown[] = []) {
  const latest = useRef(load);
  latest.current = load;
  useEffect(() => {
    let stopped = false;
    let timer: number | undefined;
    const tick = async () => {
      try {
        await latest.current();
      } catch {
        // shown by the load itself
      }
      if (!stopped && active) timer = window.setTimeout(tick, ms);
    };
    void tick();
    return () => {
      stopped = true;
      window.clearTimeout(timer);
    };
  }, [ms, active, ...deps]);
}

export const formatCount = (n: number): string => n.toLocaleString('en');

/** Saves bytes as a file the browser downloads. */
export function saveFile(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  window.setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

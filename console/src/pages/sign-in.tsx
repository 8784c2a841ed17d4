import { useState } from 'preact/hooks';
import { endReason, signIn } from '../session';
import { Feedback, Field } from '../ui';

/** Subscription key, client id and client secret, sent to POST /token; the secret is then forgotten. */
export function SignInPage() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const submit = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const values = new FormData(form);
    setBusy(true);
    setError(null);
    try {
      const refused = await signIn(
        String(values.get('subscriptionKey') ?? ''),
        String(values.get('clientId') ?? ''),
        String(values.get('clientSecret') ?? ''),
      );
      if (refused) {
        setError(refused);
        (form.elements.namedItem('clientSecret') as HTMLInputElement).value = '';
      }
    } catch (thrown) {
      setError(`The request did not reach the service: ${(thrown as Error).message}`);
    } finally {
      setBusy(false);
    }
  };
  const reason = endReason();
  return (
    <main class="sign-in">
      <h1>sfa-backoffice console</h1>
      <p>Sign in with your tenant's subscription key and API client.</p>
      {reason && (
        <p class="note" role="status">
          {reason}
        </p>
      )}
      <form onSubmit={submit} autocomplete="off">
        <Field label="Subscription key" wide>
          <input name="subscriptionKey" required autocomplete="off" spellcheck={false} />
        </Field>
        <Field label="Client id" wide>
          <input name="clientId" required autocomplete="off" spellcheck={false} />
        </Field>
        <Field label="Client secret" wide>
          <input name="clientSecret" type="password" required autocomplete="off" />
        </Field>
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        <Feedback error={error} />
      </form>
      <p>
        <a href="/docs">API reference</a>
      </p>
    </main>
  );
}

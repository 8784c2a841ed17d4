import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, test } from 'node:test';
import { outputOf } from '../helpers/child-output.js';
import { servedBackends } from '../helpers/served-settings.js';
import {
  command,
  events,
  hasScript,
  onTerminal,
  productRows,
  proxy,
  run,
  served,
  writeFile,
} from './served.js';

/*
 * `sfa-backoffice upload` end to end (extensions.md 15, issue 39): the built command against a served
 * process, through a loopback proxy that refuses a part once with 503, cuts a part's connection
 * halfway, or holds a part until the command is killed. Each test makes the files and jobs it reads:
 * any one runs alone (--test-name-pattern).
 */

const MIB = 1024 * 1024;

for (const backend of servedBackends) {
  describe(`upload on ${backend}`, { concurrency: false }, async () => {
    const service = await served(backend);
    const creds = ['--credentials', service.credentials];

    test('a 1,000,000-row file in parts: a part refused once with 503, another cut mid-part', async () => {
      const file = join(service.dir, 'million.csv');
      await writeFile(file, productRows('M', 1_000_000));
      const through = await proxy(service.url);
      through.fault = (part, seen) =>
        seen > 0
          ? { kind: 'pass' }
          : part === 2
            ? { kind: '503' }
            : part === 3
              ? { kind: 'cut', afterBytes: 2 * MIB }
              : { kind: 'pass' };
      const result = await run(['upload', file, '--resource', 'products', '--url', through.url, ...creds], {
        SFA_UPLOAD_PART_BYTES: String(3 * MIB),
      });
      assert.equal(result.code, 0, result.stdout + result.stderr);
      // The file is 10.4 MiB: four parts of 3 MiB; 2 and 3 sent twice, each other part once.
      assert.deepEqual(through.puts, ['1:pass', '2:503', '2:pass', '3:cut', '3:pass', '4:pass']);
      assert.match(result.stdout, /retrying part 2 .*503/);
      assert.match(result.stdout, /retrying part 3 /);
      assert.match(
        result.stdout,
        /succeeded; 1000000 rows: 1000000 created, 0 updated, 0 ignored, 0 invalid/,
      );
      const id = /job (job_\w+) succeeded/.exec(result.stdout)![1]!;
      const job = await service.tenant.get(`/v1/jobs/${id}`);
      assert.equal(job.body.rows.created, 1_000_000);
      assert.equal(job.body.parts.count, 4);
    });

    test('killed after its first part, the command resumes the open job with --job', async () => {
      const file = join(service.dir, 'resume.csv');
      await writeFile(file, productRows('K', 20_000));
      const through = await proxy(service.url);
      // Part 1 passes; every later part is held: the job is open with one part when the command dies.
      through.fault = (part) => (part === 1 ? { kind: 'pass' } : { kind: 'hold' });
      const env = { SFA_UPLOAD_PART_BYTES: String(128 * 1024) };
      const first = command(
        ['upload', file, '--resource', 'products', '--json', '--url', through.url, ...creds],
        env,
      );
      const ended = outputOf(first);
      let id = '';
      for await (const line of createInterface({ input: first.stdout! })) {
        const event = JSON.parse(line) as { event: string; id?: string; part?: number };
        if (event.event === 'part' && event.part === 1) {
          id = event.id!;
          first.kill('SIGKILL');
          break;
        }
      }
      assert.equal((await ended).code, null, 'killed');
      through.release();
      const open = await service.tenant.get(`/v1/jobs/${id}`);
      assert.equal(open.body.state, 'open');
      assert.equal(open.body.parts.count, 1);

      const resumed = await run(['upload', '--job', id, file, '--json', '--url', through.url, ...creds], env);
      assert.equal(resumed.code, 0, resumed.stdout + resumed.stderr);
      const seen = events(resumed.stdout);
      const start = seen.find((e) => e.event === 'job')!;
      assert.equal(start.parts_held, 1);
      const sent = seen.filter((e) => e.event === 'part').map((e) => e.part);
      assert.equal(sent[0], 2, 'part 1 is not sent again');
      assert.equal(through.puts.filter((p) => p.startsWith('1:')).length, 1);
      const summary = seen.find((e) => e.event === 'summary')!;
      assert.equal(summary.state, 'succeeded');
      assert.deepEqual(summary.rows, {
        received: 20_000,
        invalid: 0,
        created: 20_000,
        updated: 0,
        ignored: 0,
      });

      // The same command as the first run finds that job by its Idempotency-Key: no second job.
      const before = (await service.tenant.get('/v1/jobs?limit=100')).body.data.length;
      const again = await run(
        ['upload', file, '--resource', 'products', '--json', '--url', through.url, ...creds],
        env,
      );
      assert.equal(again.code, 0, again.stderr);
      assert.equal(events(again.stdout).find((e) => e.event === 'summary')!.id, id);
      assert.equal((await service.tenant.get('/v1/jobs?limit=100')).body.data.length, before);
    });

    test('invalid rows under skip: exit 2, the failed rows beside the file', async () => {
      const file = join(service.dir, 'some-invalid.csv');
      await writeFile(
        file,
        productRows('S', 1_000, (at) => at === 10 || at === 500),
      );
      const result = await run([
        'upload',
        file,
        '--resource',
        'products',
        '--on-invalid',
        'skip',
        '--url',
        service.url,
        ...creds,
      ]);
      assert.equal(result.code, 2, result.stdout + result.stderr);
      assert.match(
        result.stdout,
        /succeeded; 1000 rows: 998 created, 0 updated, 0 ignored, 2 invalid; first problems: line 12: description: /,
      );
      const failed = readFileSync(`${file}.failed.ndjson`, 'utf8')
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l));
      assert.deepEqual(
        failed.map((row) => [row.line, row.key.code]),
        [
          [12, 'S-10'],
          [502, 'S-500'],
        ],
      );
    });

    test('invalid rows under reject: exit 1, nothing written, the failed rows in --results', async () => {
      const file = join(service.dir, 'rejected.ndjson');
      writeFileSync(
        file,
        '{"code":"R-1","description":"ok","unit":"box","tax":19}\n{"code":"R-2","unit":"box","tax":19}\n',
      );
      const results = join(service.dir, 'results');
      mkdirSync(results);
      const result = await run([
        'upload',
        file,
        '--resource',
        'products',
        '--results',
        results,
        '--url',
        service.url,
        ...creds,
      ]);
      assert.equal(result.code, 1, result.stdout + result.stderr);
      assert.match(result.stdout, /failed: .*0 created.*1 invalid; first problems: line 2: description: /);
      assert.ok(existsSync(join(results, 'rejected.ndjson.failed.ndjson')));
      assert.ok(!existsSync(`${file}.failed.ndjson`));
      const products = await service.tenant.get('/v1/changes?resource=products&limit=1000');
      assert.ok(!JSON.stringify(products.body).includes('R-1'));
    });

    test('exit 3: wrong credentials, a usage error, no service; a secret is never an argument', async () => {
      const file = join(service.dir, 'small.csv');
      await writeFile(file, productRows('E', 3));
      const wrong = await run(['upload', file, '--resource', 'products', '--url', service.url], {
        SFA_SUBSCRIPTION_KEY: 'sk_0.x',
        SFA_CLIENT_ID: 'cl_nobody',
        SFA_CLIENT_SECRET: 'wrong',
      });
      assert.equal(wrong.code, 3, `${wrong.stdout} ${wrong.stderr}`);
      assert.match(wrong.stderr, /refused the credentials/);
      const noResource = await run(['upload', file, '--url', service.url, ...creds]);
      assert.equal(noResource.code, 3);
      assert.match(noResource.stderr, /--resource/);
      const unknownFormat = await run([
        'upload',
        service.credentials,
        '--resource',
        'products',
        '--url',
        service.url,
        ...creds,
      ]);
      assert.equal(unknownFormat.code, 3);
      const asArgument = await run([
        'upload',
        file,
        '--resource',
        'products',
        '--client-secret',
        'x',
        '--url',
        service.url,
      ]);
      assert.equal(asArgument.code, 3);
      assert.match(asArgument.stderr, /unknown option '--client-secret'/);
      const noCredentials = await run(['upload', file, '--resource', 'products', '--url', service.url]);
      assert.equal(noCredentials.code, 3);
      assert.match(noCredentials.stderr, /SFA_SUBSCRIPTION_KEY/);
      const down = await run([
        'upload',
        file,
        '--resource',
        'products',
        '--retries',
        '0',
        '--url',
        'http://127.0.0.1:9',
        ...creds,
      ]);
      assert.equal(down.code, 3);
      assert.match(down.stderr, /ECONNREFUSED/);
      const list = await service.tenant.get('/v1/jobs?limit=100');
      assert.ok(
        !list.body.data.some(
          (job: { resource: string; rows: { received: number } }) => job.rows.received === 3,
        ),
      );
    });

    test('jobs list, show, results and abort', async () => {
      // A job with two skipped rows, for `jobs results`.
      const file = join(service.dir, 'for-results.csv');
      await writeFile(
        file,
        productRows('J', 10, (at) => at === 3 || at === 7),
      );
      const upload = await run([
        'upload',
        file,
        '--resource',
        'products',
        '--on-invalid',
        'skip',
        '--json',
        '--url',
        service.url,
        ...creds,
      ]);
      assert.equal(upload.code, 2, upload.stdout + upload.stderr);
      const skipped = events(upload.stdout).find((e) => e.event === 'summary')!.id as string;
      const results = await run([
        'jobs',
        'results',
        skipped,
        '--outcome',
        'failed',
        '--url',
        service.url,
        ...creds,
      ]);
      assert.equal(results.code, 0, results.stderr);
      assert.deepEqual(
        results.stdout
          .trimEnd()
          .split('\n')
          .map((text) => JSON.parse(text).key.code),
        ['J-3', 'J-7'],
      );

      const created = await service.tenant.post('/v1/jobs', { resource: 'products', format: 'csv' });
      const id = created.body.id as string;
      const list = await run(['jobs', 'list', '--json', '--url', service.url, ...creds]);
      assert.equal(list.code, 0, list.stderr);
      assert.equal(JSON.parse(list.stdout)[0].id, id);
      const show = await run(['jobs', 'show', id, '--url', service.url, ...creds]);
      assert.match(show.stdout, new RegExp(`job ${id} open`));
      const aborted = await run(['jobs', 'abort', id, '--url', service.url, ...creds]);
      assert.equal(aborted.code, 0, aborted.stderr);
      assert.equal(aborted.stdout, `job ${id} aborted\n`);
      const again = await run(['jobs', 'abort', id, '--url', service.url, ...creds]);
      assert.equal(again.code, 1, 'an aborted job cannot be aborted again');
      const missing = await run(['jobs', 'show', 'job_nope', '--url', service.url, ...creds]);
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /Job not found/);
    });

    test('on a terminal, a progress bar instead of the lines', {
      skip: !hasScript && 'no `script` (util-linux)',
    }, async () => {
      const file = join(service.dir, 'on-terminal.csv');
      await writeFile(file, productRows('T', 2_000));
      const size = statSync(file).size;
      const args = ['--resource', 'products', '--url', service.url, ...creds];
      const env = { SFA_UPLOAD_PART_BYTES: String(16 * 1024) };
      const shown = await onTerminal(['upload', file, ...args], env);
      assert.equal(shown.code, 0, shown.stdout + shown.stderr);
      // The bytes' bar, drawn a last time full when the sending ends, then the rows' bar: the job
      // is queued or validating when `complete` answers.
      assert.match(shown.stdout, new RegExp(`sending  \\[[█]+\\] 100% \\| ${size}/${size} bytes`));
      assert.match(shown.stdout, /checking \[[█░]+\] \d+% \| \d+\/\d+ rows/);
      // Redrawn in place (carriage returns, no new line per part), the summary line after it.
      assert.ok(!/part \d+\/\d+ sent/.test(shown.stdout), shown.stdout);
      assert.match(shown.stdout, /\r\n?job job_\w+ succeeded; 2000 rows: 2000 created/);
      // The same command with its output piped (another file: that one is loaded): lines, no bar.
      const other = join(service.dir, 'piped.csv');
      await writeFile(other, productRows('U', 2_000));
      const piped = await run(['upload', other, ...args], env);
      assert.equal(piped.code, 0, piped.stderr);
      assert.match(piped.stdout, /part 1\/\d+ sent/);
      assert.ok(!piped.stdout.includes('sending '), piped.stdout);
    });
  });
}

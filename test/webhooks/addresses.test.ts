import assert from 'node:assert/strict';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, mock, test } from 'node:test';
import {
  AddressNotAllowed,
  addressRules,
  checkDestination,
  connectionLookup,
  parseNetworks,
  type Resolve,
} from '../../src/webhooks/addresses.js';
import { checkUrlReachable, REGISTRATION_LOOKUP_MS, WebhookRefusal } from '../../src/webhooks/endpoints.js';

/*
 * The address rules of webhook deliveries (extensions.md 11): only public addresses, judged after
 * the URL parser and DNS, at registration and at every connection; WEBHOOK_ALLOWED_NETWORKS opens
 * networks (and plain http://) for ERPs inside the operator's network. Names resolve through an
 * injected resolver: nothing outside this machine is asked.
 */

/** A resolver that answers from a table, as DNS would, and counts its questions. */
function fakeDns(table: Record<string, string[]>): Resolve & { asked: string[] } {
  const asked: string[] = [];
  const resolve = async (hostname: string) => {
    asked.push(hostname);
    const addresses = table[hostname];
    if (!addresses)
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(resolve, { asked });
}

/** The host of a URL as the WHATWG parser writes it, brackets taken off an IPv6 literal. */
const hostOf = (url: string) => new URL(url).hostname.replace(/^\[|\]$/g, '');

describe('webhook address rules', () => {
  test('spellings of inside addresses are refused once the URL parser has read them', () => {
    const rules = addressRules();
    const inside = [
      'https://127.0.0.1/',
      'https://0x7f.1/',
      'https://2130706433/',
      'https://017700000001/',
      'https://127.1/',
      'https://[::1]/',
      'https://[::ffff:127.0.0.1]/',
      'https://[::ffff:7f00:1]/',
      'https://[::ffff:169.254.169.254]/',
      'https://[::127.0.0.1]/',
      'https://[64:ff9b::7f00:1]/',
      'https://[2002:7f00:1::]/',
      'https://[fc00::1]/',
      'https://[fd12:3456::1]/',
      'https://[fe80::1]/',
      'https://[ff02::1]/',
      'https://[::]/',
      'https://0.0.0.0/',
      'https://0/',
      'https://169.254.169.254/',
      'https://10.1.2.3/',
      'https://172.16.0.1/',
      'https://172.31.255.255/',
      'https://192.168.1.1/',
      'https://100.64.0.1/',
      'https://100.127.255.255/',
      'https://224.0.0.1/',
      'https://255.255.255.255/',
      'https://198.18.0.1/',
    ];
    for (const url of inside) assert.equal(rules.allows(hostOf(url)), false, url);
    const outside = [
      'https://8.8.8.8/',
      'https://1.1.1.1/',
      'https://93.184.216.34/',
      'https://100.128.0.1/',
      'https://172.32.0.1/',
      'https://11.0.0.1/',
      'https://[2606:4700:4700::1111]/',
      'https://[2a00:1450:4001::200e]/',
    ];
    for (const url of outside) assert.equal(rules.allows(hostOf(url)), true, url);
    assert.equal(rules.allows('erp.example.com'), false, 'a name is never an address');
  });

  test('WEBHOOK_ALLOWED_NETWORKS: CIDR ranges open those networks; a mistyped entry stops the start', () => {
    const networks = parseNetworks(' 10.20.0.0/16, fd00::/8 ,127.0.0.1');
    assert.deepEqual(networks, [
      { address: '10.20.0.0', prefix: 16, family: 'ipv4' },
      { address: 'fd00::', prefix: 8, family: 'ipv6' },
      { address: '127.0.0.1', prefix: 32, family: 'ipv4' },
    ]);
    const rules = addressRules(networks);
    assert.equal(rules.allows('10.20.3.4'), true);
    assert.equal(rules.allows('10.21.0.1'), false);
    assert.equal(rules.allows('fd00::5'), true);
    assert.equal(rules.allows('127.0.0.1'), true);
    assert.equal(rules.allows('127.0.0.2'), false);
    assert.equal(rules.allows('::ffff:10.20.0.9'), true, 'an IPv4-mapped address is its IPv4 address');
    assert.equal(rules.isAllowedNetwork('8.8.8.8'), false);
    assert.deepEqual(parseNetworks(''), []);
    assert.deepEqual(parseNetworks(undefined), []);
    for (const wrong of ['10.0.0.0/33', 'fd00::/129', 'intranet', '10.0.0/8', '10.0.0.0/8/1', '10.0.0.0/x']) {
      assert.throws(() => parseNetworks(wrong), /WEBHOOK_ALLOWED_NETWORKS/, wrong);
    }
  });

  test('registration checks every address a name resolves to, and http:// only inside allowed networks', async () => {
    const dns = fakeDns({
      'erp.example.com': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
      'mixed.example.com': ['93.184.216.34', '10.0.0.7'],
      'metadata.example.com': ['169.254.169.254'],
      'erp.internal': ['10.20.0.5'],
    });
    const rules = addressRules();
    assert.deepEqual(await checkDestination(new URL('https://erp.example.com/hooks'), rules, dns), [
      '93.184.216.34',
      '2606:2800:220:1:248:1893:25c8:1946',
    ]);
    for (const url of [
      'https://mixed.example.com/',
      'https://metadata.example.com/',
      'https://erp.internal/',
      'https://[::ffff:10.0.0.1]/',
      'https://0x7f.1/',
      'http://erp.example.com/',
    ]) {
      await assert.rejects(checkDestination(new URL(url), rules, dns), AddressNotAllowed, url);
    }
    await assert.rejects(checkDestination(new URL('https://nowhere.example.com/'), rules, dns), /ENOTFOUND/);
    const operator = addressRules(parseNetworks('10.20.0.0/16'));
    assert.deepEqual(await checkDestination(new URL('http://erp.internal:8080/'), operator, dns), [
      '10.20.0.5',
    ]);
    await assert.rejects(
      checkDestination(new URL('http://erp.example.com/'), operator, dns),
      AddressNotAllowed,
    );
  });

  /** Addresses of IPv6 ranges that embed an IPv4 address or are not globally reachable. */
  const SPECIAL_IPV6 = [
    '::ffff:0:a9fe:a9fe', // IPv4-translated 169.254.169.254
    '::ffff:0:7f00:1', // IPv4-translated 127.0.0.1
    '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo
    '2001::1',
    '2001:2::1', // benchmarking
    '2001:10::1', // ORCHID
    '2001:1f:ffff::1',
    '3fff::1', // documentation
    '3fff:fff:ffff::1',
    '5f00::1', // SRv6
    '5f00:ffff::1',
  ];

  test('IPv6 ranges that embed an IPv4 address or are not reachable are refused; their neighbours are not', async () => {
    const rules = addressRules();
    for (const address of SPECIAL_IPV6) assert.equal(rules.allows(address), false, address);
    for (const address of ['2001:20::1', '2001:4860:4860::8888', '4000::1', '5f01::1', '3fff:1000::1']) {
      assert.equal(rules.allows(address), true, address);
    }
    assert.equal(
      rules.allows('8.8.8.8'),
      true,
      'an IPv4 rule of its own is not caught by the translated range',
    );
    const dns = fakeDns({ 'teredo.example.com': ['2001:0:4136:e378:8000:63bf:3fff:fdd2'] });
    await assert.rejects(
      checkDestination(new URL('https://teredo.example.com/'), rules, dns),
      AddressNotAllowed,
    );
    for (const address of SPECIAL_IPV6) {
      await assert.rejects(checkDestination(new URL(`https://[${address}]/`), rules, dns), AddressNotAllowed);
      assert.throws(() => connectionLookup(new URL(`https://[${address}]/`), rules, dns), AddressNotAllowed);
    }
  });

  describe('the 400 of a registration', () => {
    const context = (resolve: Resolve, allowed = '') => ({
      rules: addressRules(parseNetworks(allowed)),
      resolve,
      sealingKey: async () => new Uint8Array(32),
      generation: async () => 1,
    });
    const refusal = async (url: string, resolve: Resolve) => {
      const error = await checkUrlReachable(new URL(url), context(resolve)).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      assert.ok(error instanceof WebhookRefusal, `${url} was not refused: ${String(error)}`);
      assert.equal(error.statusCode, 400);
      return error.errors as { field?: string; message: string }[];
    };

    test('a host that is not public names the setting that allows it', async () => {
      const errors = await refusal('https://erp.internal/', fakeDns({ 'erp.internal': ['10.1.2.3'] }));
      assert.equal(errors.length, 1);
      assert.equal(errors[0]!.field, 'url');
      assert.match(errors[0]!.message, /not public.*WEBHOOK_ALLOWED_NETWORKS/);
    });

    test('a resolver that never answers is given up after its bound, with a 400 naming url', async () => {
      mock.timers.enable({ apis: ['setTimeout'] });
      after(() => mock.timers.reset());
      let asked = 0;
      const hanging: Resolve = () => {
        asked++;
        return new Promise(() => {});
      };
      const answered = refusal('https://slow.example.com/', hanging);
      // The lookup has begun once the resolver was asked; then the bound's time passes.
      while (asked === 0) await new Promise((done) => setImmediate(done));
      mock.timers.tick(REGISTRATION_LOOKUP_MS - 1);
      let settled = false;
      void answered.then(() => {
        settled = true;
      });
      await new Promise((done) => setImmediate(done));
      assert.equal(settled, false, 'still waiting just before the bound');
      mock.timers.tick(1);
      const errors = await answered;
      assert.deepEqual(errors, [
        {
          field: 'url',
          message: `Host name did not resolve within ${REGISTRATION_LOOKUP_MS / 1000} seconds`,
        },
      ]);
    });
  });

  describe('at every connection', () => {
    let connections = 0;
    const receiver = createServer((_request, response) => response.end('ok'));
    receiver.on('connection', () => {
      connections++;
    });
    after(() => receiver.close());

    /** POSTs to the loopback receiver under the name given, connecting as a delivery does under these rules. */
    async function deliver(url: string, rules: ReturnType<typeof addressRules>, dns: Resolve) {
      if (!receiver.listening) await new Promise<void>((done) => receiver.listen(0, '127.0.0.1', done));
      const { port } = receiver.address() as AddressInfo;
      const target = new URL(url);
      target.port = String(port);
      return new Promise<{ status?: number; error?: Error }>((done) => {
        let lookup: ReturnType<typeof connectionLookup>;
        try {
          lookup = connectionLookup(target, rules, dns);
        } catch (error) {
          done({ error: error as Error });
          return;
        }
        const request = httpRequest(target, { method: 'POST', lookup });
        request.on('response', (response) => {
          response.resume();
          done({ status: response.statusCode });
        });
        request.on('error', (error) => done({ error }));
        request.end('{}');
      });
    }

    test('a name that resolves inside is never connected to; allowed networks are', async () => {
      // Public at registration, 127.0.0.1 at the connection: the connection is refused before it opens.
      const dns = fakeDns({ 'erp.example.com': ['127.0.0.1'] });
      const before = connections;
      const refused = await deliver('http://erp.example.com/hooks', addressRules(), dns);
      assert.ok(refused.error instanceof AddressNotAllowed, String(refused.error));
      assert.equal(refused.error.message, 'address not allowed');
      const literal = await deliver('http://127.0.0.1/hooks', addressRules(), dns);
      assert.ok(literal.error instanceof AddressNotAllowed);
      assert.equal(connections, before, 'no socket reached the receiver');
      assert.deepEqual(dns.asked, ['erp.example.com']);

      const operator = addressRules(parseNetworks('127.0.0.0/8'));
      assert.deepEqual(await deliver('http://erp.example.com/hooks', operator, dns), { status: 200 });
      assert.equal(connections, before + 1);
    });
  });
});

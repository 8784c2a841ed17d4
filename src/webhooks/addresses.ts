import type { LookupAddress, LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';

/*
 * Where a webhook delivery may go (extensions.md 11, "Addresses"): only to public addresses, unless
 * the operator allows some networks (WEBHOOK_ALLOWED_NETWORKS, for ERPs inside its own network). The
 * rule is applied to addresses, never to spellings: a URL's host is parsed by the WHATWG URL parser
 * (which turns 0x7f.1, 2130706433 and 127.1 into 127.0.0.1), a name is resolved, and every address it
 * resolves to is checked, at registration and again by the lookup every connection makes, so a name
 * that resolves to a public address today and to 127.0.0.1 tomorrow cannot reach inside.
 */

/** Resolves a host name to all its addresses (dns.lookup with all: true, or a test's own). */
export type Resolve = (hostname: string) => Promise<readonly LookupAddress[]>;

/** A delivery's destination that the rules refuse; `message` is what the attempt and the 400 say. */
export class AddressNotAllowed extends Error {
  constructor(readonly address: string) {
    super('address not allowed');
    this.name = 'AddressNotAllowed';
  }
}

/**
 * Networks that are not the public internet. IPv4-mapped IPv6 addresses (::ffff:127.0.0.1) are
 * judged as the IPv4 address they carry (BlockList does so); the prefixes that embed an IPv4 address
 * any other way (IPv4-compatible, IPv4-translated, NAT64, Teredo, 6to4) are refused whole, as are the
 * ranges of IANA's special-purpose registry that are not globally reachable.
 */
const NOT_PUBLIC: readonly [string, number, 'ipv4' | 'ipv6'][] = [
  ['0.0.0.0', 8, 'ipv4'], // "this network", 0.0.0.0 included
  ['10.0.0.0', 8, 'ipv4'], // private (RFC 1918)
  ['100.64.0.0', 10, 'ipv4'], // shared address space (carrier-grade NAT)
  ['127.0.0.0', 8, 'ipv4'], // loopback
  ['169.254.0.0', 16, 'ipv4'], // link-local, cloud metadata (169.254.169.254) included
  ['172.16.0.0', 12, 'ipv4'], // private
  ['192.0.0.0', 24, 'ipv4'], // IETF protocol assignments
  ['192.0.2.0', 24, 'ipv4'], // documentation
  ['192.168.0.0', 16, 'ipv4'], // private
  ['198.18.0.0', 15, 'ipv4'], // benchmarking
  ['198.51.100.0', 24, 'ipv4'], // documentation
  ['203.0.113.0', 24, 'ipv4'], // documentation
  ['224.0.0.0', 4, 'ipv4'], // multicast
  ['240.0.0.0', 4, 'ipv4'], // reserved, broadcast included
  ['::', 96, 'ipv6'], // unspecified, loopback, and IPv4-compatible addresses
  ['::ffff:0:0:0', 96, 'ipv6'], // IPv4-translated (RFC 2765): an IPv4 address inside
  ['64:ff9b::', 96, 'ipv6'], // NAT64: an IPv4 address behind a translator
  ['64:ff9b:1::', 48, 'ipv6'], // local-use NAT64
  ['100::', 64, 'ipv6'], // discard-only
  ['2001::', 32, 'ipv6'], // Teredo: an IPv4 address (and port) inside
  ['2001:2::', 48, 'ipv6'], // benchmarking
  ['2001:10::', 28, 'ipv6'], // ORCHID (deprecated), not routed
  ['2001:db8::', 32, 'ipv6'], // documentation
  ['2002::', 16, 'ipv6'], // 6to4: an IPv4 address inside
  ['3fff::', 20, 'ipv6'], // documentation (RFC 9637)
  ['5f00::', 16, 'ipv6'], // SRv6 segment identifiers (RFC 9602), not routed on the internet
  ['fc00::', 7, 'ipv6'], // unique-local
  ['fe80::', 10, 'ipv6'], // link-local
  ['fec0::', 10, 'ipv6'], // site-local (deprecated)
  ['ff00::', 8, 'ipv6'], // multicast
];

/** A CIDR range as WEBHOOK_ALLOWED_NETWORKS writes it: 10.20.0.0/16, fd00::/8, or one address. */
export interface Network {
  address: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
}

/**
 * The networks of a WEBHOOK_ALLOWED_NETWORKS value (comma-separated CIDR ranges; empty: none). Throws
 * with the entry that is not one, so a mistyped setting stops the start instead of being ignored.
 */
export function parseNetworks(setting: string | undefined): Network[] {
  const networks: Network[] = [];
  for (const entry of (setting ?? '').split(',')) {
    const text = entry.trim();
    if (text === '') continue;
    const [address = '', prefixText, ...rest] = text.split('/');
    const version = isIP(address);
    const max = version === 6 ? 128 : 32;
    const prefix = prefixText === undefined ? max : Number(prefixText);
    if (
      version === 0 ||
      rest.length > 0 ||
      (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText)) ||
      prefix > max
    ) {
      throw new Error(
        `WEBHOOK_ALLOWED_NETWORKS: "${text}" is not a CIDR range such as 10.0.0.0/8 or fd00::/8`,
      );
    }
    networks.push({ address, prefix, family: version === 6 ? 'ipv6' : 'ipv4' });
  }
  return networks;
}

/** What a delivery may reach, given the networks the operator allows. */
export interface AddressRules {
  /** An address (IPv4 or IPv6, as a resolver gives it) a delivery may connect to. */
  allows(address: string): boolean;
  /** Inside WEBHOOK_ALLOWED_NETWORKS: the only addresses a plain http:// URL may reach. */
  isAllowedNetwork(address: string): boolean;
}

export function addressRules(allowed: readonly Network[] = []): AddressRules {
  const notPublic = new BlockList();
  for (const [address, prefix, family] of NOT_PUBLIC) notPublic.addSubnet(address, prefix, family);
  const operator = new BlockList();
  for (const network of allowed) operator.addSubnet(network.address, network.prefix, network.family);
  const familyOf = (address: string) => (isIP(address) === 6 ? 'ipv6' : 'ipv4');
  const isAllowedNetwork = (address: string) =>
    isIP(address) !== 0 && allowed.length > 0 && operator.check(address, familyOf(address));
  return {
    isAllowedNetwork,
    allows(address) {
      if (isIP(address) === 0) return false;
      return isAllowedNetwork(address) || !notPublic.check(address, familyOf(address));
    },
  };
}

/** The host of a URL as an address when it is one ([::1] -> ::1), else undefined. */
function literalAddress(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return isIP(bare) === 0 ? undefined : bare;
}

/**
 * Every address a URL's host stands for, each allowed by the rules (and, for http://, inside the
 * allowed networks); throws AddressNotAllowed naming the first that is not. For registration: a URL
 * whose host resolves to nothing fails with the resolver's own error.
 */
export async function checkDestination(url: URL, rules: AddressRules, resolve: Resolve): Promise<string[]> {
  const literal = literalAddress(url.hostname);
  const addresses = literal ? [literal] : (await resolve(url.hostname)).map((found) => found.address);
  if (addresses.length === 0) throw new AddressNotAllowed(url.hostname);
  for (const address of addresses) {
    if (!reachable(rules, url.protocol, address)) throw new AddressNotAllowed(address);
  }
  return addresses;
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/** Whether a URL of this protocol may reach the address: http:// only inside the allowed networks. */
function reachable(rules: AddressRules, protocol: string, address: string): boolean {
  return protocol === 'http:' ? rules.isAllowedNetwork(address) : rules.allows(address);
}

/**
 * The `lookup` of every connection a delivery to a URL of this protocol makes (http.request's or an
 * agent's option): resolves as the resolver does, and fails the connection with AddressNotAllowed
 * when any address the name has is refused, so the socket is never opened towards it.
 */
function guardedLookup(rules: AddressRules, resolve: Resolve, protocol: string) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    const literal = literalAddress(hostname);
    const found: Promise<readonly LookupAddress[]> = literal
      ? Promise.resolve([{ address: literal, family: isIP(literal) }])
      : resolve(hostname);
    found.then(
      (addresses) => {
        const refused = addresses.find((entry) => !reachable(rules, protocol, entry.address));
        if (refused || addresses.length === 0) {
          callback(new AddressNotAllowed(refused?.address ?? hostname), []);
          return;
        }
        if (options.all) callback(null, [...addresses]);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, []),
    );
  };
}

/**
 * The `lookup` a delivery to `url` connects with. A URL whose host is an address is judged here, at
 * once: a connection to an address asks no lookup, so guardedLookup would never see it.
 */
export function connectionLookup(url: URL, rules: AddressRules, resolve: Resolve) {
  const literal = literalAddress(url.hostname);
  if (literal !== undefined && !reachable(rules, url.protocol, literal)) throw new AddressNotAllowed(literal);
  return guardedLookup(rules, resolve, url.protocol);
}

import { isIPv6 } from 'node:net';

/**
 * The address a throttle counts a caller by. IPv4: the address itself. IPv6: its /64 network, which
 * one host or subscriber usually holds whole (RFC 6177): counted per address, one host could take a
 * fresh share of every limit with each of its 2^64 addresses. An IPv4 address mapped into IPv6
 * (::ffff:a.b.c.d, as a dual-stack listener reports IPv4 clients) counts as the IPv4 address.
 */
export function callerAddress(ip: string): string {
  if (!isIPv6(ip)) return ip;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1]!;
  const [head, tail] = ip.split('::') as [string, string | undefined];
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  // A zone id (fe80::1%eth0) or an embedded IPv4 tail changes nothing in the first four groups.
  const groups =
    tail === undefined ? left : [...left, ...new Array(8 - left.length - right.length).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((group) => Number.parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}

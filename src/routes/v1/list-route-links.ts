import { isIPv6 } from 'node:net';
import type { FastifyRequest } from 'fastify';

/**
 * A host as RFC 3986 writes it, kept to what a client can resolve: a name or IPv4 address of
 * unreserved characters (no percent-encoding or sub-delimiters), or a bracketed IPv6 address, and an
 * optional port.
 */
const HOST = /^(?:[A-Za-z0-9._~-]{1,253}|\[([0-9A-Fa-f:.]{2,45})\])(?::(\d{1,5}))?$/;

/** Whether a Host (or X-Forwarded-Host) value is a well-formed host[:port]. */
export function isWellFormedHost(host: string): boolean {
  const match = HOST.exec(host);
  if (!match) return false;
  const [, ipv6, port] = match;
  if (ipv6 !== undefined && !isIPv6(ipv6)) return false;
  return port === undefined || Number(port) <= 65535;
}

/**
 * The scheme and authority (and path prefix) paging links start with
 * (docs/decisions/0054-paging-links.md): PUBLIC_BASE_URL when set; else the request's scheme and
 * host (X-Forwarded-* only from
 * trusted proxies, as Fastify reads them), if both are well formed; else '' and the links are
 * relative. A client chooses its Host header, and a link must never repeat whatever it sent.
 */
export function linkBase(request: FastifyRequest, publicBaseUrl: string | undefined): string {
  if (publicBaseUrl !== undefined) return publicBaseUrl;
  const protocol = request.protocol?.toLowerCase();
  if (protocol !== 'http' && protocol !== 'https') return '';
  const host = request.host;
  return isWellFormedHost(host) ? `${protocol}://${host}` : '';
}

/**
 * Which addresses an http target may reach. Link-local addresses, among them
 * the cloud metadata service (169.254.169.254, fd00:ec2::254), hand out
 * credentials to whoever asks from inside the host, so a job type must opt in
 * explicitly before the worker sends requests there. The check applies to the
 * addresses a host name resolves to, and the connection is pinned to the
 * address that passed, so DNS cannot swap in another one afterwards.
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to all its addresses; injected so tests can point names anywhere. */
export type ResolveHost = (hostname: string) => Promise<ResolvedAddress[]>;

export const resolveWithSystemDns: ResolveHost = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));

const refused = new BlockList();
refused.addSubnet('169.254.0.0', 16, 'ipv4');
refused.addSubnet('fe80::', 10, 'ipv6');
refused.addAddress('fd00:ec2::254', 'ipv6');

/** `::ffff:a9fe:a9fe` and `::ffff:169.254.169.254` reach the same IPv4 host as `169.254.169.254`. */
function unmapIpv4(address: string): string {
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (dotted) return dotted[1]!;
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return address;
  const high = parseInt(hex[1]!, 16);
  const low = parseInt(hex[2]!, 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/** True for a link-local or metadata address (IPv4, IPv6, or IPv4 mapped into IPv6). */
export function isLinkLocalAddress(address: string): boolean {
  const plain = unmapIpv4(address.replace(/^\[|\]$/g, '').replace(/%.*$/, ''));
  const family = isIP(plain);
  if (family === 0) return false;
  return refused.check(plain, family === 4 ? 'ipv4' : 'ipv6');
}

/** The URL's host when it is an IP literal, without IPv6 brackets; undefined for a host name. */
export function literalAddressOf(url: URL): string | undefined {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return isIP(host) === 0 ? undefined : host;
}

/**
 * Which addresses an http target may reach. The worker sends a request wherever a job type's URL points,
 * so the address says what the request could touch besides the downstream:
 *   - link-local, among them the cloud metadata service (169.254.169.254, fd00:ec2::254), which hands out
 *     credentials to whoever asks from inside the host: refused unless the type opts in (allow_link_local);
 *   - loopback and unspecified (127.0.0.0/8, 0.0.0.0/8, ::1, ::): the worker's own host, in Lambda its
 *     runtime API (127.0.0.1:9001), which would hand the job's request to the function's own invocation
 *     loop. Refused where the worker runs deployed; the local runtime allows them, its downstreams run there;
 *   - private (RFC 1918, 100.64.0.0/10, fc00::/7, ...): allowed unless the deployment refuses them.
 * An IPv6 address that carries an IPv4 one (mapped, compatible, translated, NAT64, 6to4, Teredo) is
 * whatever the worse of the two is, so no spelling reaches an address its IPv4 form could not.
 * The check applies to the addresses a host name resolves to, and the connection is pinned to the
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

/** From the least to the most an http target may not reach by default. */
export type AddressKind = 'public' | 'private' | 'loopback' | 'link_local';
const KIND_ORDER: readonly AddressKind[] = ['public', 'private', 'loopback', 'link_local'];

/** Which of the kinds that depend on where the worker runs it may reach; link-local is the type's own choice. */
export interface TargetAddressPolicy {
  allowLoopback: boolean;
  allowPrivate: boolean;
}

/** What a deployment may say of private addresses (HTTP_TARGET_PRIVATE_ADDRESSES), the first its default. */
export const PRIVATE_ADDRESS_CHOICES = ['allow', 'refuse'] as const;
export type PrivateAddressChoice = (typeof PRIVATE_ADDRESS_CHOICES)[number];

/** The local runtime's: its downstreams (`npm run downstream`) listen on this machine. */
export const LOCAL_TARGET_ADDRESSES: TargetAddressPolicy = { allowLoopback: true, allowPrivate: true };

function blockList(ipv4: [string, number][], ipv6: [string, number][]): BlockList {
  const list = new BlockList();
  for (const [network, prefix] of ipv4) list.addSubnet(network, prefix, 'ipv4');
  for (const [network, prefix] of ipv6) list.addSubnet(network, prefix, 'ipv6');
  return list;
}

const KINDS: readonly [AddressKind, BlockList][] = [
  ['link_local', blockList([['169.254.0.0', 16]], [['fe80::', 10], ['fd00:ec2::254', 128]])],
  ['loopback', blockList([['127.0.0.0', 8], ['0.0.0.0', 8]], [['::1', 128], ['::', 128]])],
  [
    'private',
    blockList(
      [['10.0.0.0', 8], ['172.16.0.0', 12], ['192.168.0.0', 16], ['100.64.0.0', 10], ['192.0.0.0', 24], ['198.18.0.0', 15]],
      [['fc00::', 7], ['fec0::', 10]],
    ),
  ],
];

function kindOfPlain(address: string, family: 'ipv4' | 'ipv6'): AddressKind {
  return KINDS.find(([, list]) => list.check(address, family))?.[0] ?? 'public';
}

/** The eight 16-bit groups of a valid IPv6 address, a trailing dotted quad included. */
function ipv6Groups(address: string): number[] {
  let text = address;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const groups = (part: string | undefined): number[] => (part ? part.split(':').map((group) => parseInt(group, 16)) : []);
  const [head, tail] = text.split('::');
  if (tail === undefined) return groups(head);
  const before = groups(head);
  const after = groups(tail);
  return [...before, ...new Array<number>(8 - before.length - after.length).fill(0), ...after];
}

const dottedQuad = (high: number, low: number): string => [high >> 8, high & 255, low >> 8, low & 255].join('.');

/** The IPv4 addresses an IPv6 address carries and would reach through. */
function embeddedIpv4(groups: number[]): string[] {
  const [g0, g1, g2, g3, g4, g5, g6, g7] = groups as [number, number, number, number, number, number, number, number];
  const zeroUpTo = (end: number) => groups.slice(0, end).every((group) => group === 0);
  // ::a.b.c.d (compatible), ::ffff:a.b.c.d (mapped), ::ffff:0:a.b.c.d (translated).
  if (zeroUpTo(5) && (g5 === 0 || g5 === 0xffff)) return [dottedQuad(g6, g7)];
  if (zeroUpTo(4) && g4 === 0xffff && g5 === 0) return [dottedQuad(g6, g7)];
  // NAT64: the well-known 64:ff9b::/96 and the local-use 64:ff9b:1::/48 (RFC 6052's layout for a /48).
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return [dottedQuad(g6, g7)];
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 1) return [dottedQuad(g3, ((g4 & 255) << 8) | (g5 >> 8))];
  // 6to4 (2002::/16) and Teredo (2001::/32: its server, and its client with every bit inverted).
  if (g0 === 0x2002) return [dottedQuad(g1, g2)];
  if (g0 === 0x2001 && g1 === 0) return [dottedQuad(g2, g3), dottedQuad(g6 ^ 0xffff, g7 ^ 0xffff)];
  return [];
}

const worse = (a: AddressKind, b: AddressKind): AddressKind => (KIND_ORDER.indexOf(a) >= KIND_ORDER.indexOf(b) ? a : b);

/** The kind of an IP address, in any spelling (brackets, a zone, IPv4 inside IPv6); undefined for a non-address. */
export function addressKindOf(address: string): AddressKind | undefined {
  const plain = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(plain);
  if (family === 0) return undefined;
  if (family === 4) return kindOfPlain(plain, 'ipv4');
  return embeddedIpv4(ipv6Groups(plain)).reduce<AddressKind>((kind, ipv4) => worse(kind, kindOfPlain(ipv4, 'ipv4')), kindOfPlain(plain, 'ipv6'));
}

/** True for a link-local or metadata address, in any spelling. */
export function isLinkLocalAddress(address: string): boolean {
  return addressKindOf(address) === 'link_local';
}

/** The URL's host when it is an IP literal, without IPv6 brackets; undefined for a host name. */
export function literalAddressOf(url: URL): string | undefined {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return isIP(host) === 0 ? undefined : host;
}

/** `localhost` and its subdomains are the host itself, whatever DNS would say (RFC 6761). */
const isLocalhostName = (hostname: string): boolean => /(?:^|\.)localhost\.?$/i.test(hostname);

/**
 * Why a request to `address` is refused under `policy`, as a sentence about `host` (the URL's host), or
 * undefined when it may go.
 */
export function addressRefusal(host: string, address: string, policy: TargetAddressPolicy, allowLinkLocal: boolean): string | undefined {
  const kind = addressKindOf(address) ?? 'public';
  const is = host === address ? `${host} is` : `${host} resolves to`;
  if (kind === 'link_local' && !allowLinkLocal) {
    return `${is} the link-local or metadata address ${address}; set allow_link_local on the target to allow it`;
  }
  if (kind === 'loopback' && !policy.allowLoopback) {
    return `${is} the loopback or unspecified address ${address}, the worker's own host, which deployed workers never send to`;
  }
  if (kind === 'private' && !policy.allowPrivate) {
    return `${is} the private address ${address}, which this deployment refuses (HTTP_TARGET_PRIVATE_ADDRESSES=refuse)`;
  }
  return undefined;
}

/**
 * What can be told of a URL before any lookup: its literal address, or `localhost`. A host name is checked
 * again at connect time, on the addresses it resolves to then.
 */
export function urlAddressRefusal(url: URL, policy: TargetAddressPolicy, allowLinkLocal: boolean): string | undefined {
  const literal = literalAddressOf(url);
  if (literal !== undefined) return addressRefusal(literal, literal, policy, allowLinkLocal);
  return isLocalhostName(url.hostname) ? addressRefusal(url.hostname, '127.0.0.1', policy, allowLinkLocal) : undefined;
}

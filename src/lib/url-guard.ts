import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { lookup as lookupAsync } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/** Why a webhook URL was refused at creation. */
export type GuardIssue =
  | 'invalid_url'
  | 'insecure_scheme'
  | 'too_long'
  | 'forbidden_address'
  | 'unresolvable_host'
  | 'credentials_not_allowed';

/**
 * How strict the guard is, and how it resolves host names (injectable for tests). `allowInsecure`
 * (WEBHOOK_ALLOW_INSECURE_URLS) allows http:// and loopback and private addresses; link-local and
 * cloud metadata addresses stay refused.
 */
export interface UrlGuardOptions {
  allowInsecure: boolean;
  resolve?: (host: string) => Promise<string[]>;
}

type GuardResult = { ok: true; url: URL } | { ok: false; issue: GuardIssue; message: string };

const MAX_URL_LENGTH = 2048; // docs/api.md#webhooks
const BLOCKED_CODE = 'EBLOCKEDADDRESS';

// The ranges ipaddr.js does not name. Its IPv6 default 'unicast' is "none of the listed ranges",
// which also covers unallocated space and the deprecated IPv4-compatible ::/96; only 2000::/3 is
// allocated global unicast, so that is what we accept.
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');
// ipaddr.js files both NAT64 prefixes under 'rfc6052'; only the well-known /96 reaches the public
// IPv4 internet, 64:ff9b:1::/48 is for local use (RFC 8215).
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96');

/** Whether an IP address string is a public unicast address; anything unparsable is not. */
export function isPublicAddress(ip: string): boolean {
  // net.isIP is strict: odd spellings ipaddr.js would accept (0x7f.1) never pass as "public".
  if (isIP(ip) === 0) return false;
  const addr = ipaddr.parse(ip);
  return addr.kind() === 'ipv4' ? isPublicV4(addr as ipaddr.IPv4) : isPublicV6(addr as ipaddr.IPv6);
}

function isPublicV4(addr: ipaddr.IPv4): boolean {
  // Allow-list: the anycast service ranges ipaddr.js names (AS112, AMT) are refused as well;
  // no webhook receiver lives there, and refusing is the safe side.
  return addr.range() === 'unicast';
}

function isPublicV6(addr: ipaddr.IPv6): boolean {
  const p = addr.parts as [number, number, number, number, number, number, number, number];
  switch (addr.range()) {
    case 'ipv4Mapped':
    case 'rfc6145':
      return isPublicV4(v4FromParts(p[6], p[7]));
    case 'rfc6052':
      return addr.match(NAT64_WELL_KNOWN) && isPublicV4(v4FromParts(p[6], p[7]));
    case '6to4':
      return isPublicV4(v4FromParts(p[1], p[2]));
    case 'teredo':
      // 2001:0:<server v4>:<flags>:<port>:<client v4 XOR ffff:ffff>; traffic goes to both.
      return isPublicV4(v4FromParts(p[2], p[3])) && isPublicV4(v4FromParts(~p[6], ~p[7]));
    case 'unicast':
      return addr.match(GLOBAL_UNICAST_V6);
    default:
      return false;
  }
}

function v4FromParts(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([(high >> 8) & 0xff, high & 0xff, (low >> 8) & 0xff, low & 0xff]);
}

// Cloud metadata services outside 169.254.0.0/16: AWS's IPv6 one, and Alibaba Cloud's (inside CGNAT space).
const METADATA_ADDRESSES = [ipaddr.parse('fd00:ec2::254'), ipaddr.parse('100.100.100.200')];

/**
 * Whether an IP address string is link-local (169.254.0.0/16, fe80::/10) or a cloud metadata address, itself or
 * inside an IPv6 address that carries an IPv4 one (mapped, translated, NAT64, 6to4, Teredo, IPv4-compatible):
 * refused even with WEBHOOK_ALLOW_INSECURE_URLS. An IP string ipaddr.js cannot read counts as one; a host name does not.
 */
export function isLinkLocalOrMetadata(ip: string): boolean {
  if (isIP(ip) === 0) return false;
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.parse(ip);
  } catch {
    return true;
  }
  if (METADATA_ADDRESSES.some((m) => m.kind() === addr.kind() && m.toString() === addr.toString())) return true;
  if (addr.range() === 'linkLocal') return true;
  return addr.kind() === 'ipv6' && embeddedV4(addr as ipaddr.IPv6).some((v4) => isLinkLocalOrMetadata(v4.toString()));
}

// The IPv4 addresses an IPv6 address leads to, in the forms that carry one.
function embeddedV4(addr: ipaddr.IPv6): ipaddr.IPv4[] {
  const p = addr.parts as [number, number, number, number, number, number, number, number];
  switch (addr.range()) {
    case 'ipv4Mapped':
    case 'rfc6145':
    case 'rfc6052':
      return [v4FromParts(p[6], p[7])];
    case '6to4':
      return [v4FromParts(p[1], p[2])];
    case 'teredo':
      return [v4FromParts(p[2], p[3]), v4FromParts(~p[6], ~p[7])];
    default:
      // IPv4-compatible (::a.b.c.d, deprecated): ipaddr.js files it under 'unicast'.
      return p.slice(0, 6).every((x) => x === 0) ? [v4FromParts(p[6], p[7])] : [];
  }
}

/** Why the guard refuses to reach `ip`, or null: `link_local` whatever the setting, `not_public` unless `allowInsecure`. */
function refusalOf(ip: string, allowInsecure: boolean): 'link_local' | 'not_public' | null {
  if (isLinkLocalOrMetadata(ip)) return 'link_local';
  return allowInsecure || isPublicAddress(ip) ? null : 'not_public';
}

/** The fix for a refused URL while developing locally (docs/api.md#webhook-urls). */
const INSECURE_HINT =
  'For local development, the server setting WEBHOOK_ALLOW_INSECURE_URLS=true allows http:// and loopback or private addresses.';

/** Checks a webhook URL at creation (length, https and public addresses: docs/api.md#webhook-urls); never throws. */
export async function checkWebhookUrl(url: string, opts: UrlGuardOptions): Promise<GuardResult> {
  const parsed = parseWebhookUrl(url);
  if (!parsed.ok) return parsed;
  if (!opts.allowInsecure && parsed.url.protocol !== 'https:') {
    return refuse('insecure_scheme', `url must use https://. ${INSECURE_HINT}`);
  }
  const host = bareHost(parsed.url);
  if (isIP(host) !== 0) {
    const why = refusalOf(host, opts.allowInsecure);
    return why === null ? parsed : refuse('forbidden_address', refusedMessage('points to', host, why));
  }
  return checkResolvedHost(parsed.url, host, opts);
}

// The checks that hold even with WEBHOOK_ALLOW_INSECURE_URLS (with the address check above).
function parseWebhookUrl(url: string): GuardResult {
  if (url.length > MAX_URL_LENGTH) {
    return refuse('too_long', `url must be at most ${MAX_URL_LENGTH} characters`);
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return refuse('invalid_url', 'url must be an absolute http:// or https:// URL');
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    return refuse('invalid_url', 'url must be an absolute http:// or https:// URL');
  }
  if (parsed.username !== '' || parsed.password !== '') {
    return refuse('credentials_not_allowed', 'url must not contain a user name or password');
  }
  return { ok: true, url: parsed };
}

async function checkResolvedHost(url: URL, host: string, opts: UrlGuardOptions): Promise<GuardResult> {
  let addresses: string[];
  try {
    addresses = await (opts.resolve ?? resolveAll)(host);
  } catch {
    addresses = [];
  }
  if (addresses.length === 0) {
    // In development a receiver's name may resolve only where the worker runs: its dial is checked then.
    if (opts.allowInsecure) return { ok: true, url };
    return refuse('unresolvable_host', `url host ${host} could not be resolved`);
  }
  // Every address, not just the first: the client may dial any of them.
  for (const address of addresses) {
    const why = refusalOf(address, opts.allowInsecure);
    if (why !== null) return refuse('forbidden_address', refusedMessage('resolves to', address, why));
  }
  return { ok: true, url };
}

async function resolveAll(host: string): Promise<string[]> {
  const found = await lookupAsync(host, { all: true, verbatim: true });
  return found.map((a) => a.address);
}

function refuse(issue: GuardIssue, message: string): GuardResult {
  return { ok: false, issue, message };
}

const LINK_LOCAL =
  'a link-local or cloud metadata address, refused whatever the settings (WEBHOOK_ALLOW_INSECURE_URLS=true does not allow it)';

function refusedMessage(verb: string, address: string, why: 'link_local' | 'not_public'): string {
  if (why === 'link_local') return `url ${verb} ${address}, ${LINK_LOCAL}.`;
  return `url ${verb} ${address}, which is not a public address. ${INSECURE_HINT}`;
}

// WHATWG keeps the brackets of an IPv6 literal in `hostname`; dialling and isIP want them off.
function bareHost(url: URL): string {
  const h = url.hostname;
  return h.startsWith('[') && h.endsWith(']') ? h.slice(1, -1) : h;
}

function blockedAddressError(
  hostname: string,
  address: string,
  why: 'link_local' | 'not_public',
): NodeJS.ErrnoException {
  const target = hostname === address ? address : `${address} (${hostname})`;
  const err: NodeJS.ErrnoException & { hostname?: string; address?: string } = new Error(
    why === 'link_local'
      ? `refusing to connect to ${target}: ${LINK_LOCAL}`
      : `refusing to connect to ${target}: not a public address (WEBHOOK_ALLOW_INSECURE_URLS=true on the ` +
          'process that delivers, `wsvc worker` or `wsvc serve`, allows it, for local development only)',
  );
  err.code = BLOCKED_CODE;
  err.hostname = hostname;
  err.address = address;
  return err;
}

/**
 * A node:net `lookup` that resolves like dns.lookup but fails with code EBLOCKEDADDRESS when any address is refused:
 * not public, or with `allowInsecure` (WEBHOOK_ALLOW_INSECURE_URLS) link-local or cloud metadata.
 */
export function guardedLookup(allowInsecure = false): LookupFunction {
  return (hostname, options, callback) => {
    // Resolve everything so one private address among public ones still blocks the host;
    // dns.lookup orders `all` results the same way, so the first is what a single lookup returns.
    const allOptions: LookupAllOptions = { ...options, all: true };
    dnsLookup(hostname, allOptions, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, options.all ? [] : '');
      for (const a of addresses) {
        const why = refusalOf(a.address, allowInsecure);
        if (why !== null) return callback(blockedAddressError(hostname, a.address, why), options.all ? [] : '');
      }
      if (options.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(blockedAddressError(hostname, '(none)', 'not_public'), '');
      callback(null, first.address, first.family);
    });
  };
}

/** Throws the EBLOCKEDADDRESS error when the URL's host is an IP literal the guard refuses (Node skips `lookup` for those). */
export function assertDialableHost(url: URL, allowInsecure = false): void {
  const host = bareHost(url);
  if (isIP(host) === 0) return;
  const why = refusalOf(host, allowInsecure);
  if (why !== null) throw blockedAddressError(host, host, why);
}

import { BlockList, isIP } from 'node:net';

/** Ranges no outbound request may reach unless the allowlist names them (RFC 6890 special-purpose, loopback, link-local, private). */
const PRIVATE_V4 = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const;
const PRIVATE_V6 = [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const;

function privateRanges(): BlockList {
  const list = new BlockList();
  for (const [net, prefix] of PRIVATE_V4) list.addSubnet(net, prefix, 'ipv4');
  for (const [net, prefix] of PRIVATE_V6) list.addSubnet(net, prefix, 'ipv6');
  return list;
}

/** An IPv4 address embedded in an IPv6 one (IPv4-mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`), so it is judged as IPv4. */
function embeddedV4(address: string): string | null {
  const lower = address.toLowerCase();
  const match = /^(?:::ffff:(?:0:)?|64:ff9b::)(.+)$/.exec(lower);
  if (!match?.[1]) return null;
  const rest = match[1];
  if (isIP(rest) === 4) return rest;
  const hex = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(rest);
  if (!hex?.[1] || !hex[2]) return null;
  const high = Number.parseInt(hex[1], 16);
  const low = Number.parseInt(hex[2], 16);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

/**
 * Decides which addresses outbound requests may reach: public addresses always; private, loopback and
 * link-local ones only when the allowlist names the host or a CIDR/address that contains them.
 */
export class AddressGuard {
  readonly #private = privateRanges();
  readonly #allowedNets = new BlockList();
  readonly #allowedHosts = new Set<string>();

  /** `allowlist`: hosts and CIDRs or single addresses, e.g. `['127.0.0.1', '10.0.0.0/8', 'wiki.internal']`. */
  constructor(allowlist: readonly string[]) {
    for (const raw of allowlist) {
      const entry = raw.trim().toLowerCase();
      if (!entry) continue;
      const [net, prefix] = entry.split('/');
      const bare = net?.replace(/^\[|\]$/g, '') ?? '';
      const family = isIP(bare);
      if (family && prefix !== undefined) {
        this.#allowedNets.addSubnet(bare, Number(prefix), family === 4 ? 'ipv4' : 'ipv6');
      } else if (family) {
        this.#allowedNets.addAddress(bare, family === 4 ? 'ipv4' : 'ipv6');
      } else {
        this.#allowedHosts.add(entry);
      }
    }
  }

  /** Whether the allowlist names this host itself (then every address it resolves to is allowed). */
  allowsHost(hostname: string): boolean {
    return this.#allowedHosts.has(hostname.toLowerCase().replace(/^\[|\]$/g, ''));
  }

  /** Whether a resolved address may be contacted for this host. */
  allows(hostname: string, address: string): boolean {
    if (this.allowsHost(hostname)) return true;
    const v4 = embeddedV4(address);
    const candidate = v4 ?? address;
    const family = isIP(candidate);
    if (!family) return false;
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (this.#allowedNets.check(candidate, type)) return true;
    return !this.#private.check(candidate, type);
  }
}

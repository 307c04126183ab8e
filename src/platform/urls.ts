/**
 * The absolute base URL that a caller reached us at: the configured public URL, or else what
 * the request says: X-Forwarded-* from a proxy in front, then the Host header, then the URL of
 * the call itself (HTTP/2 has no Host header, only :authority, which ends up in the URL).
 *
 * Those headers are the caller's to write. A value that is not a host (`a b`, `[::1`,
 * `example.com:99999`, `%`) or a protocol other than http and https is ignored, and the next
 * source is used; the last resort is `localhost`. So every URL built on the result parses.
 */
export function baseUrlOf(header: Headers, publicUrl: string | undefined, callUrl?: string): string {
  if (publicUrl) return publicUrl;
  const fromUrl = callUrl ? URL.parse(callUrl) : null;
  const proto = forwardedProto(header.get("x-forwarded-proto")) ?? validProto(fromUrl?.protocol.replace(":", "")) ?? "http";
  const host =
    forwardedHost(header.get("x-forwarded-host")) ??
    validHost(header.get("host") ?? undefined) ??
    validHost(fromUrl?.host) ??
    "localhost";
  return `${proto}://${host}`;
}

/** Longer than any DNS name (253) with a port; longer values are not looked at. */
const MAX_HOST_CHARS = 300;

/** A name or IPv4 address, or a bracketed IPv6 address, then an optional port. No nested repetition: linear time. */
const hostShape = /^(?:[A-Za-z0-9._~-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

/** `host[:port]` as URL writes it (lower case, default port dropped), or undefined when it is not a valid one. */
export function validHost(value: string | undefined): string | undefined {
  if (!value || value.length > MAX_HOST_CHARS || !hostShape.test(value)) return undefined;
  // The shape lets through what URL refuses (a port over 65535, a bad IPv6 address).
  return URL.parse(`http://${value}`)?.host || undefined;
}

/** The first host of an X-Forwarded-Host (proxies append theirs), if it is a valid one. */
export function forwardedHost(value: string | null): string | undefined {
  return validHost(firstValue(value));
}

/** The first protocol of an X-Forwarded-Proto, if it is http or https. */
export function forwardedProto(value: string | null): string | undefined {
  return validProto(firstValue(value));
}

function validProto(value: string | undefined): string | undefined {
  const proto = value?.toLowerCase();
  return proto === "http" || proto === "https" ? proto : undefined;
}

function firstValue(value: string | null): string | undefined {
  return value?.split(",")[0]?.trim() || undefined;
}

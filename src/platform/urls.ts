/**
 * The absolute base URL that a caller reached us at: the configured public URL, or else what
 * the request says: X-Forwarded-* from a proxy in front, then the Host header, then the URL of
 * the call itself (HTTP/2 has no Host header, only :authority, which ends up in the URL).
 */
export function baseUrlOf(header: Headers, publicUrl: string | undefined, callUrl?: string): string {
  if (publicUrl) return publicUrl;
  const fromUrl = callUrl ? URL.parse(callUrl) : null;
  const proto = firstValue(header.get("x-forwarded-proto")) ?? fromUrl?.protocol.replace(":", "") ?? "http";
  const host = firstValue(header.get("x-forwarded-host")) ?? header.get("host") ?? fromUrl?.host ?? "localhost";
  return `${proto}://${host}`;
}

function firstValue(value: string | null): string | undefined {
  return value?.split(",")[0]?.trim() || undefined;
}

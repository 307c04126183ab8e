/**
 * The absolute base URL that a caller reached us at: the configured public URL, or else what
 * the request says (X-Forwarded-* from a proxy in front, then Host).
 */
export function baseUrlOf(header: Headers, publicUrl: string | undefined): string {
  if (publicUrl) return publicUrl;
  const proto = firstValue(header.get("x-forwarded-proto")) ?? "http";
  const host = firstValue(header.get("x-forwarded-host")) ?? header.get("host") ?? "localhost";
  return `${proto}://${host}`;
}

function firstValue(value: string | null): string | undefined {
  return value?.split(",")[0]?.trim() || undefined;
}

import { randomBytes } from "node:crypto";

/** Gateway keys start with this; management keys have a prefix of their own (sk-wm-). */
export const gatewayKeyPrefix = "sk-wg-";

export function generateGatewayKey(): string {
  return gatewayKeyPrefix + randomBytes(32).toString("base64url");
}

/** Enough of a key to tell it apart in a list, and nothing that helps guess it. */
export function displayPrefix(secret: string): string {
  return secret.slice(0, gatewayKeyPrefix.length + 4);
}

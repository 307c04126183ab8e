import { createHash, randomBytes } from "node:crypto";

/** Management API keys start with this; gateway keys have a prefix of their own. */
export const managementKeyPrefix = "sk-wm-";

export function generateManagementKey(): string {
  return managementKeyPrefix + randomBytes(32).toString("base64url");
}

/** Keys are long random secrets, so a fast hash is enough: there is nothing to brute-force. */
export function hashKey(secret: string): string {
  return createHash("sha256").update(secret, "utf8").digest("hex");
}

/** What the guardrails know how to find: the names configuration may use. */

/** Entity types, named as Presidio names them. */
export const piiEntityTypes = [
  "CREDIT_CARD",
  "US_SSN",
  "IBAN_CODE",
  "EMAIL_ADDRESS",
  "PHONE_NUMBER",
  "IP_ADDRESS",
  "US_PASSPORT",
  "CRYPTO",
] as const;
export type PiiEntityType = (typeof piiEntityTypes)[number];

/** Blocked by a PII guardrail that names no types: the ones that move money or prove identity. */
export const defaultHighRiskPii: readonly PiiEntityType[] = ["CREDIT_CARD", "US_SSN", "IBAN_CODE", "US_PASSPORT", "CRYPTO"];

export const contentCategories = ["hate", "harassment", "violence", "sexual", "self_harm", "profanity"] as const;
export type ContentCategory = (typeof contentCategories)[number];

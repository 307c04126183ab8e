import { PII_ENTITY_TYPES, type PiiEntityType } from "./detectors/pii.ts";

/** What the guardrails know how to find, as configuration names it: the detectors' own lists. */

export { CONTENT_CATEGORIES as contentCategories } from "./detectors/content-safety.ts";
export const piiEntityTypes = PII_ENTITY_TYPES;

/** Blocked by a PII guardrail that names no types: the ones that move money or prove identity. */
export const defaultHighRiskPii: readonly PiiEntityType[] = ["CREDIT_CARD", "US_SSN", "IBAN_CODE", "US_PASSPORT", "CRYPTO"];

import type { EndpointSpec } from "../endpoints/specs.ts";
import { defaultHighRiskPii } from "./catalog.ts";
import type { PiiDetector, PiiEntityType, PiiFinding } from "./detectors/pii.ts";

/**
 * PII redaction: each entity a redacting PII guardrail finds is replaced with its type in
 * brackets (`[CREDIT_CARD]`), in the same pieces of text the guardrails read, and counted by
 * type. Counts, never values, go to the request log.
 */

/** Entities replaced, by type. */
export type EntityCounts = Record<string, number>;

/** The placeholder an entity of this type becomes. */
export const placeholderOf = (type: string): string => `[${type}]`;

/** The types a guardrail redacts: the ones it names, else the high-risk default (as for blocking). */
export function redactedTypes(entityTypes: readonly string[]): readonly PiiEntityType[] {
  return (entityTypes.length > 0 ? entityTypes : defaultHighRiskPii) as readonly PiiEntityType[];
}

/** `text` with every finding (sorted, not overlapping, as the detector reports them) replaced. */
export function withPlaceholders(text: string, findings: readonly PiiFinding[], counts: EntityCounts): string {
  if (findings.length === 0) return text;
  let out = "";
  let at = 0;
  for (const finding of findings) {
    out += text.slice(at, finding.start) + placeholderOf(finding.entityType);
    at = finding.end;
    counts[finding.entityType] = (counts[finding.entityType] ?? 0) + 1;
  }
  return out + text.slice(at);
}

/** A rewrite for one request's pieces of text, counting into `counts`. */
export function redactor(pii: PiiDetector, entityTypes: readonly string[], counts: EntityCounts): (text: string) => string {
  const types = redactedTypes(entityTypes);
  return (text) => withPlaceholders(text, pii.detect(text, { entityTypes: types }), counts);
}

/** Redacts a request body's caller text in place; the counts, or undefined when nothing was found. */
export function redactRequest(pii: PiiDetector, spec: EndpointSpec, body: Record<string, unknown>, entityTypes: readonly string[]): EntityCounts | undefined {
  const counts: EntityCounts = {};
  spec.rewriteInputText(body, redactor(pii, entityTypes, counts));
  return Object.keys(counts).length > 0 ? counts : undefined;
}

/** Redacts a parsed answer's text in place; the counts, or undefined when nothing was found. */
export function redactAnswer(pii: PiiDetector, spec: EndpointSpec, answer: unknown, entityTypes: readonly string[]): EntityCounts | undefined {
  const counts: EntityCounts = {};
  spec.rewriteOutputText(answer, redactor(pii, entityTypes, counts));
  return Object.keys(counts).length > 0 ? counts : undefined;
}

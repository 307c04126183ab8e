import type { JsonValue } from "@bufbuild/protobuf";
import type { InjectionDetector } from "../../gateway/guardrails/detectors/injection.ts";
import { PII_ENTITY_TYPES, type PiiDetector, type PiiEntityType } from "../../gateway/guardrails/detectors/pii.ts";

/**
 * Row checks computed in the process, value by value: the PII and prompt-injection counts use the
 * gateway's own detectors, so that a test and a guardrail agree on what they see.
 */
export type TextCheck =
  | { kind: "pii"; entityTypes: readonly PiiEntityType[] }
  | { kind: "promptInjection" }
  | { kind: "isJson" }
  | { kind: "containsValidUrl" };

/** The detectors the checks use, loaded once per process. */
export interface TextDetectors {
  pii: PiiDetector;
  injection: InjectionDetector;
}

/** The PII types a `pii_type` parameter names (all of them when it is absent), or an error. */
export function piiTypesOf(value: JsonValue | undefined): readonly PiiEntityType[] | { error: string } {
  if (value === undefined || value === null) return PII_ENTITY_TYPES;
  const names = typeof value === "string" ? [value] : value;
  const known = new Set<string>(PII_ENTITY_TYPES);
  if (!Array.isArray(names) || names.length === 0 || !names.every((n): n is string => typeof n === "string" && known.has(n.toUpperCase()))) {
    return { error: `The parameter pii_type must name PII types among: ${PII_ENTITY_TYPES.join(", ")}` };
  }
  return names.map((n) => n.toUpperCase() as PiiEntityType);
}

/** A value as text: a string as it is, any other value as its JSON. */
export function textOf(value: JsonValue): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/**
 * URLs as users write them: http or https, a host with a dot (or localhost), up to the next space
 * or closing bracket. One linear pass; `URL` then decides whether each candidate is valid.
 */
const urlCandidates = /\bhttps?:\/\/[^\s<>"'`)\]}]+/giu;

function hasValidUrl(text: string): boolean {
  for (const [candidate] of text.matchAll(urlCandidates)) {
    const trimmed = candidate.replace(/[.,;:!?]+$/u, "");
    if (!URL.canParse(trimmed)) continue;
    const host = new URL(trimmed).hostname;
    if (host === "localhost" || (host.includes(".") && !host.startsWith(".") && !host.endsWith("."))) return true;
  }
  return false;
}

/** A value that is a JSON object or array: sent as one, or as a string that parses to one. */
function isJsonDocument(value: JsonValue): boolean {
  if (typeof value === "object") return true;
  if (typeof value !== "string") return false;
  const text = value.trim();
  if (!text.startsWith("{") && !text.startsWith("[")) return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether a row's value fails the check: it holds PII of the types, is a prompt injection, is not
 * a JSON document, or has no valid URL. A row without a value (null or missing) is left out.
 */
export function failsCheck(check: TextCheck, value: JsonValue, detectors: TextDetectors): boolean {
  if (value === null) return false;
  switch (check.kind) {
    case "pii":
      return detectors.pii.detect(textOf(value), { entityTypes: check.entityTypes }).length > 0;
    case "promptInjection":
      return detectors.injection.score(textOf(value)) >= detectors.injection.threshold;
    case "isJson":
      return !isJsonDocument(value);
    case "containsValidUrl":
      return !hasValidUrl(textOf(value));
  }
}

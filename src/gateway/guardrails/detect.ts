import { piiReason, promptInjectionReason, toxicContentReason } from "../dataplane/errors.ts";
import { defaultHighRiskPii } from "./catalog.ts";
import type { ContentCategory } from "./detectors/content-safety.ts";
import type { Detectors } from "./detectors/loader.ts";
import type { PiiEntityType } from "./detectors/pii.ts";

/**
 * One built-in detector's check of a text, as plain data: it runs the same on the event loop and
 * in a detector worker (worker.ts), and its answer (a block reason, or none) is small.
 */
export type DetectorCheck =
  | { kind: "pii"; entityTypes: readonly string[] }
  | { kind: "prompt_injection"; threshold: number | null; /** The operator's own text: the blocking rules only. */ rulesOnly?: boolean }
  | { kind: "content_safety"; thresholds: Readonly<Record<string, number>> };

/**
 * A detector's block: the 422 reason, and for PII the entity types found (a request whose texts
 * are checked one by one is refused with the types of all of them).
 */
export interface DetectorBlock {
  reason: string;
  entityTypes?: string[];
}

/** The block when the detector blocks the text, else undefined; throws when it is missing. */
export function detect(detectors: Partial<Detectors>, check: DetectorCheck, text: string): DetectorBlock | undefined {
  switch (check.kind) {
    case "pii": {
      const entityTypes = (check.entityTypes.length > 0 ? check.entityTypes : defaultHighRiskPii) as PiiEntityType[];
      const found = present(detectors.pii, check.kind).detect(text, { entityTypes }).map((f) => f.entityType);
      return found.length > 0 ? { reason: piiReason(found), entityTypes: [...new Set(found)] } : undefined;
    }
    case "prompt_injection": {
      const detector = present(detectors.injection, check.kind);
      const score = check.rulesOnly ? detector.explain(text).rules : detector.score(text);
      return score >= (check.threshold ?? detector.threshold) ? { reason: promptInjectionReason(score) } : undefined;
    }
    case "content_safety": {
      const detector = present(detectors.content, check.kind);
      const overrides = check.thresholds as Partial<Record<ContentCategory, number>>;
      const [worst] = detector.flagged(text, overrides);
      return worst ? { reason: toxicContentReason(worst.category, worst.score, overrides[worst.category] ?? detector.thresholds[worst.category]) } : undefined;
    }
  }
}

/** A detector that failed to load is an error, which the guardrail's fail mode decides. */
function present<T>(detector: T | undefined, kind: DetectorCheck["kind"]): T {
  if (!detector) throw new Error(`the ${kind} detector failed to load`);
  return detector;
}

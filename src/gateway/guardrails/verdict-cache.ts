import { hash } from "node:crypto";
import type { GuardrailConfig } from "../config/types.ts";
import type { DetectorBlock } from "./detect.ts";

type Verdict = DetectorBlock | null;

/**
 * Verdicts by digest, then by scope (the workspace and the guardrail's settings): a text's digest
 * is one string for all the guardrails of a stage, and a scope one string per guardrail, so a
 * look-up hashes nothing new (a key written out as both cost a string of a hundred characters made
 * and hashed per look-up).
 */
class Generation {
  readonly #byDigest = new Map<string, Map<string, Verdict>>();
  size = 0;

  get(scope: string, digest: string): Verdict | undefined {
    return this.#byDigest.get(digest)?.get(scope);
  }

  has(scope: string, digest: string): boolean {
    return this.#byDigest.get(digest)?.has(scope) ?? false;
  }

  set(scope: string, digest: string, verdict: Verdict): void {
    let scopes = this.#byDigest.get(digest);
    if (!scopes) {
      scopes = new Map();
      this.#byDigest.set(digest, scopes);
    }
    if (!scopes.has(scope)) this.size += 1;
    scopes.set(scope, verdict);
  }

  delete(scope: string, digest: string): void {
    const scopes = this.#byDigest.get(digest);
    if (!scopes?.delete(scope)) return;
    this.size -= 1;
    if (scopes.size === 0) this.#byDigest.delete(digest);
  }
}

/**
 * Guardrail verdicts by segment of caller text (the system prompt, each message, each tool
 * result), so that a conversation's history is not read again on every turn: the same content
 * gets the same answer (the spec), so a verdict can be kept. Bounded: never more than
 * `maxEntries`; what goes first is what was used least recently, by generation (below).
 *
 * A verdict is kept under the SHA-256 of the text (a digest that cannot be forged to collide, so
 * no text can borrow another's pass) and a scope: the workspace and the guardrail's settings. The
 * workspace is in it so that how fast a text is answered never tells one tenant what another sent. Only verdicts a
 * detector gave are kept: not a failure let through, nor a plug-in's (it may change).
 *
 * Two generations rather than an exact LRU: a hit in the young map costs one look-up, where an
 * exact LRU moves the entry on every hit (a delete and a set, which leave holes that make a large
 * Map rehash). A 20-turn conversation looks up 60 keys a call; the exact LRU's moves were the
 * gateway's most expensive function in the profile (docs/performance.md, "Every check on").
 */
export class VerdictCache {
  /**
   * The young generation turns old when it holds this many: the old one then holds as many, and
   * the young one fewer, so together at most 2 × ceil(max / 2) − 1 ≤ `maxEntries`.
   */
  readonly #generation: number;
  #young = new Generation();
  /** The generation before: a hit here moves the entry to the young one. `null` is a pass. */
  #old = new Generation();
  hits = 0;
  misses = 0;

  constructor(maxEntries: number) {
    this.#generation = Math.ceil(maxEntries / 2);
  }

  get size(): number {
    return this.#young.size + this.#old.size;
  }

  /** The block kept for a text (by its digest) under a scope (see {@link cacheScope}), a pass (null), or undefined when none is kept. */
  get(scope: string, digest: string): Verdict | undefined {
    let verdict = this.#young.get(scope, digest);
    if (verdict === undefined) {
      verdict = this.#old.get(scope, digest);
      if (verdict === undefined) {
        this.misses += 1;
        return undefined;
      }
      this.#old.delete(scope, digest);
      this.#keep(scope, digest, verdict);
    }
    this.hits += 1;
    return verdict;
  }

  set(scope: string, digest: string, verdict: Verdict): void {
    if (this.#generation === 0) return;
    if (this.#young.has(scope, digest)) this.#young.set(scope, digest, verdict);
    else {
      this.#old.delete(scope, digest);
      this.#keep(scope, digest, verdict);
    }
  }

  /** A new entry in the young generation; a full one becomes the old, and the old is dropped. */
  #keep(scope: string, digest: string, verdict: Verdict): void {
    this.#young.set(scope, digest, verdict);
    if (this.#young.size >= this.#generation) {
      this.#old = this.#young;
      this.#young = new Generation();
    }
  }
}

/** A text's digest, for the cache: computed once per text, whatever the number of guardrails. */
export function textDigest(text: string): string {
  return hash("sha256", text, "base64");
}

/**
 * The scope of a guardrail's verdicts: its workspace, what decides a built-in detector's verdict
 * besides the text, and whether the text is the operator's own (the system prompt, which prompt
 * injection reads with its rules only: the same text from a user may get another verdict).
 */
export function cacheScope(workspaceId: string, guardrail: GuardrailConfig, operator = false): string {
  let scope = scopes.get(guardrail);
  if (scope?.workspaceId !== workspaceId) {
    const text = `${workspaceId}\u0000${settingsText(guardrail)}`;
    scope = { workspaceId, text, operatorText: `${text}\u0000operator` };
    scopes.set(guardrail, scope);
  }
  return operator ? scope.operatorText : scope.text;
}

/**
 * Made once per guardrail of a snapshot (a guardrail belongs to one workspace's snapshot): the
 * content-safety thresholds' text is not cheap, and the same string each time is hashed once.
 */
const scopes = new WeakMap<GuardrailConfig, { workspaceId: string; text: string; operatorText: string }>();

function settingsText(guardrail: GuardrailConfig): string {
  switch (guardrail.kind) {
    case "pii":
      return `pii:${guardrail.piiEntityTypes.join(",")}`;
    case "prompt_injection":
      return `prompt_injection:${guardrail.injectionThreshold ?? ""}`;
    case "content_safety":
      return `content_safety:${JSON.stringify(Object.entries(guardrail.contentThresholds).sort(([a], [b]) => a.localeCompare(b)))}`;
  }
}

import { hash } from "node:crypto";
import type { GuardrailConfig } from "../config/types.ts";
import type { DetectorBlock } from "./detect.ts";

type Verdict = DetectorBlock | null;

/**
 * Verdicts by scope (the workspace and the guardrail's settings), then by text key
 * ({@link cacheKey}): a scope is one string per guardrail and a text's key one string for all the
 * guardrails of a stage, so a look-up makes no string (a key written out as both cost a string of
 * a hundred characters made and hashed per look-up). Scopes are few and texts many: a new text is
 * one entry in each scope's map, where a map per text (texts first) was a Map object and its
 * table for each, kept as long as the verdict, so promoted to the old generation.
 */
class Generation {
  readonly #byScope = new Map<string, Map<string, Verdict>>();
  size = 0;

  get(scope: string, key: string): Verdict | undefined {
    return this.#byScope.get(scope)?.get(key);
  }

  has(scope: string, key: string): boolean {
    return this.#byScope.get(scope)?.has(key) ?? false;
  }

  set(scope: string, key: string, verdict: Verdict): void {
    let keys = this.#byScope.get(scope);
    if (!keys) {
      keys = new Map();
      this.#byScope.set(scope, keys);
    }
    const before = keys.size;
    keys.set(key, verdict);
    this.size += keys.size - before;
  }

  delete(scope: string, key: string): void {
    const keys = this.#byScope.get(scope);
    if (!keys?.delete(key)) return;
    this.size -= 1;
    if (keys.size === 0) this.#byScope.delete(scope);
  }
}

/**
 * Guardrail verdicts by segment of caller text (the system prompt, each message, each tool
 * result), so that a conversation's history is not read again on every turn: the same content
 * gets the same answer (the spec), so a verdict can be kept. Bounded: never more than
 * `maxEntries`; what goes first is what was used least recently, by generation (below).
 *
 * A verdict is kept under the text's key ({@link cacheKey}: the text itself when short, else its
 * SHA-256, a digest that cannot be forged to collide, so no text can borrow another's pass) and a
 * scope: the workspace and the guardrail's settings. The workspace is in it so that how fast a
 * text is answered never tells one tenant what another sent. Only verdicts a detector gave are
 * kept: not a failure let through, nor a plug-in's (it may change).
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

  /** The block kept for a text (by its {@link cacheKey}) under a scope (see {@link cacheScope}), a pass (null), or undefined when none is kept. */
  get(scope: string, key: string): Verdict | undefined {
    let verdict = this.#young.get(scope, key);
    if (verdict === undefined) {
      verdict = this.#old.get(scope, key);
      if (verdict === undefined) {
        this.misses += 1;
        return undefined;
      }
      this.#old.delete(scope, key);
      this.#keep(scope, key, verdict);
    }
    this.hits += 1;
    return verdict;
  }

  set(scope: string, key: string, verdict: Verdict): void {
    if (this.#generation === 0) return;
    if (this.#young.has(scope, key)) this.#young.set(scope, key, verdict);
    else {
      this.#old.delete(scope, key);
      this.#keep(scope, key, verdict);
    }
  }

  /** A new entry in the young generation; a full one becomes the old, and the old is dropped. */
  #keep(scope: string, key: string, verdict: Verdict): void {
    this.#young.set(scope, key, verdict);
    if (this.#young.size >= this.#generation) {
      this.#old = this.#young;
      this.#young = new Generation();
    }
  }
}

/**
 * Texts up to this long are their own cache key. A Map hashes and compares a string of a few
 * hundred characters in a fraction of a microsecond; a SHA-256 through the crypto binding cost
 * about 2 µs a text, 43 µs for the 20 messages of a conversation's turn (docs/performance.md,
 * "The verdict cache's key"). The price is memory: a kept text holds up to this many characters
 * (one byte each for Latin-1 text, two otherwise) where a digest holds 45.
 */
export const TEXT_KEY_CHARS = 512;

/**
 * A text's key in the cache, made once per text whatever the number of guardrails: the text
 * itself when it is short and does not start with U+0000, else U+0000 and its SHA-256. A text key
 * never starts with U+0000 and a digest key always does, so no text can stand for another's
 * digest (sent first, such a text would lend its pass to the long text whose digest it spells).
 */
export function cacheKey(text: string): string {
  if (text.length <= TEXT_KEY_CHARS && text.charCodeAt(0) !== 0) return text;
  return `\u0000${hash("sha256", text, "base64")}`;
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

import { hash } from "node:crypto";
import type { GuardrailConfig } from "../config/types.ts";
import type { DetectorBlock } from "./detect.ts";

/**
 * Guardrail verdicts by segment of caller text (the system prompt, each message, each tool
 * result), so that a conversation's history is not read again on every turn: the same content
 * gets the same answer (the spec), so a verdict can be kept. Bounded: never more than
 * `maxEntries`; what goes first is what was used least recently, by generation (below).
 *
 * A key is the workspace, the guardrail's settings and the SHA-256 of the text (a digest that
 * cannot be forged to collide, so no text can borrow another's pass). The workspace is in it so
 * that how fast a text is answered never tells one tenant what another sent. Only verdicts a
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
  #young = new Map<string, DetectorBlock | null>();
  /** The generation before: a hit here moves the entry to the young one. `null` is a pass. */
  #old = new Map<string, DetectorBlock | null>();
  hits = 0;
  misses = 0;

  constructor(maxEntries: number) {
    this.#generation = Math.ceil(maxEntries / 2);
  }

  get size(): number {
    return this.#young.size + this.#old.size;
  }

  /** The block kept, a pass (null), or undefined when none is kept. */
  get(key: string): DetectorBlock | null | undefined {
    let verdict = this.#young.get(key);
    if (verdict === undefined) {
      verdict = this.#old.get(key);
      if (verdict === undefined) {
        this.misses += 1;
        return undefined;
      }
      this.#old.delete(key);
      this.#keep(key, verdict);
    }
    this.hits += 1;
    return verdict;
  }

  set(key: string, verdict: DetectorBlock | null): void {
    if (this.#generation === 0) return;
    if (this.#young.has(key)) this.#young.set(key, verdict);
    else {
      this.#old.delete(key);
      this.#keep(key, verdict);
    }
  }

  /** A new entry in the young generation; a full one becomes the old, and the old is dropped. */
  #keep(key: string, verdict: DetectorBlock | null): void {
    this.#young.set(key, verdict);
    if (this.#young.size >= this.#generation) {
      this.#old = this.#young;
      this.#young = new Map();
    }
  }
}

/** A text's digest, for {@link cacheKey}: computed once per text, whatever the number of guardrails. */
export function textDigest(text: string): string {
  return hash("sha256", text, "base64");
}

/** The key of a text, by its digest, under a guardrail of a workspace. */
export function cacheKey(workspaceId: string, guardrail: GuardrailConfig, digest: string): string {
  return `${workspaceId}\u0000${settingsOf(guardrail)}\u0000${digest}`;
}

/** Made once per guardrail of a snapshot: the content-safety thresholds' text is not cheap. */
const settingsKeys = new WeakMap<GuardrailConfig, string>();

/** What decides a built-in detector's verdict, besides the text. */
function settingsOf(guardrail: GuardrailConfig): string {
  let settings = settingsKeys.get(guardrail);
  if (settings === undefined) {
    settings = settingsText(guardrail);
    settingsKeys.set(guardrail, settings);
  }
  return settings;
}

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

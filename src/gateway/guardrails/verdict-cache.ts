import { hash } from "node:crypto";
import type { GuardrailConfig } from "../config/types.ts";
import type { DetectorBlock } from "./detect.ts";

/**
 * Guardrail verdicts by segment of caller text (the system prompt, each message, each tool
 * result), so that a conversation's history is not read again on every turn: the same content
 * gets the same answer (the spec), so a verdict can be kept. Bounded: past `maxEntries`, the
 * least recently used goes.
 *
 * A key is the workspace, the guardrail's settings and the SHA-256 of the text. The workspace is
 * in it so that how fast a text is answered never tells one tenant what another sent. Only
 * verdicts a detector gave are kept: not a failure let through, nor a plug-in's (it may change).
 */
export class VerdictCache {
  readonly #maxEntries: number;
  /** Insertion order is use order: a hit moves its entry to the end. `null` is a pass. */
  readonly #entries = new Map<string, DetectorBlock | null>();
  hits = 0;
  misses = 0;

  constructor(maxEntries: number) {
    this.#maxEntries = maxEntries;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The key of a text under a guardrail of a workspace. */
  keyOf(workspaceId: string, guardrail: GuardrailConfig, text: string): string {
    return `${workspaceId}\u0000${settingsOf(guardrail)}\u0000${hash("sha256", text, "base64")}`;
  }

  /** The block kept, a pass (null), or undefined when none is kept. */
  get(key: string): DetectorBlock | null | undefined {
    const verdict = this.#entries.get(key);
    if (verdict === undefined) {
      this.misses += 1;
      return undefined;
    }
    this.hits += 1;
    this.#entries.delete(key);
    this.#entries.set(key, verdict);
    return verdict;
  }

  set(key: string, verdict: DetectorBlock | null): void {
    if (this.#maxEntries === 0) return;
    this.#entries.delete(key);
    this.#entries.set(key, verdict);
    if (this.#entries.size > this.#maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
  }
}

/** What decides a built-in detector's verdict, besides the text. */
function settingsOf(guardrail: GuardrailConfig): string {
  switch (guardrail.kind) {
    case "pii":
      return `pii:${guardrail.piiEntityTypes.join(",")}`;
    case "prompt_injection":
      return `prompt_injection:${guardrail.injectionThreshold ?? ""}`;
    case "content_safety":
      return `content_safety:${JSON.stringify(Object.entries(guardrail.contentThresholds).sort(([a], [b]) => a.localeCompare(b)))}`;
  }
}

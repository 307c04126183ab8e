import { availableParallelism } from "node:os";

/** How much guardrails read, and where and how long they may take (docs/guardrails.md, "Limits"). */
export interface GuardrailLimits {
  /** The most caller or answer text, in UTF-8 bytes, that each guardrail reads for one request. */
  maxTextBytes: number;
  /** Detector worker threads of the gateway process. */
  workers: number;
  /** Checks that may wait for a busy worker; past it, 503 "gateway at capacity". */
  queueLimit: number;
  /** One check, from submission (queue included) to answer; past it, a detector error. */
  timeoutMs: number;
  /** Text the output guardrails read past a streamed piece before it goes to the caller (stream-guard.ts). */
  streamWindowChars: number;
  /** Verdicts on pieces of caller text kept for the next turn of a conversation (verdict-cache.ts). */
  cacheEntries: number;
}

/**
 * The cap's bounds. Past about 3.5 million characters in one run, V8's regular expressions run
 * out of backtracking stack on crafted text (a single word of that length in a two-byte string):
 * 2 MiB keeps every detector's input below that.
 */
export const MAX_TEXT_BYTES_RANGE = { min: 1024, max: 2 * 1024 * 1024 } as const;

export const defaultGuardrailLimits: GuardrailLimits = {
  maxTextBytes: 1024 * 1024,
  // One core stays for the event loop.
  workers: Math.max(1, Math.min(4, availableParallelism() - 1)),
  queueLimit: 64,
  timeoutMs: 10_000,
  // A card number in groups of four with a few words of context fits; about 15 tokens of delay.
  streamWindowChars: 64,
  // About 200 bytes each: some 4 MB at most.
  cacheEntries: 20_000,
};

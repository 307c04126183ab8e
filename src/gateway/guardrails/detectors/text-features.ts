import { nfkc } from "./normalize.ts";

/**
 * Hashed bag-of-n-grams features shared by the injection classifier and its training script
 * (scripts/train-injection.ts), so that both see exactly the same vector for a text.
 *
 * Features: word unigrams, word bigrams and character 3–5-grams inside each word padded with
 * spaces (" word "), each hashed with 32-bit FNV-1a into `dims` buckets (a power of two). Counts
 * become log(1 + count) and the block is scaled to unit length, so long texts and short ones
 * weigh alike.
 */

export interface FeatureConfig {
  /** Number of hash buckets: a power of two. */
  dims: number;
  /** Shortest and longest character n-gram. */
  charMin: number;
  charMax: number;
}

export type SparseVector = Map<number, number>;

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** Seeds that keep the feature kinds apart in the hash space. */
const SEED_WORD = 0x2f1a3b5c;
const SEED_BIGRAM = 0x5a7c9e01;
const SEED_CHAR = 0x13579bdf;

function fnvStep(hash: number, code: number): number {
  return Math.imul(hash ^ code, FNV_PRIME) >>> 0;
}

export function hashString(seed: number, text: string): number {
  let h = (FNV_OFFSET ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) h = fnvStep(h, text.charCodeAt(i));
  return h;
}

/**
 * A word: a letter or digit, then letters, marks and digits. Marks belong to the word: Devanagari,
 * Bengali and Thai write most vowels as combining marks, and splitting there cuts words into
 * syllables.
 */
export const WORD = /[\p{L}\p{N}][\p{L}\p{M}\p{N}]*/gu;

/** NFKC, lower case: what every feature is computed on. */
export function foldText(text: string): string {
  return nfkc(text).toLowerCase();
}

/** The words of a folded text (see {@link foldText}). */
export function wordsOf(folded: string): string[] {
  return folded.match(WORD) ?? [];
}

/** Lower-cased NFKC words of a raw text. */
export function words(text: string): string[] {
  return wordsOf(foldText(text));
}

/** Adds 1 to a bucket of a count map. */
export function bump(counts: SparseVector, hash: number, mask: number): void {
  const bucket = hash & mask;
  counts.set(bucket, (counts.get(bucket) ?? 0) + 1);
}

/** Log-scales a count map, scales it to unit length and adds it to `into`. */
export function addBlock(into: SparseVector, counts: SparseVector): void {
  let norm = 0;
  for (const count of counts.values()) {
    const v = Math.log1p(count);
    norm += v * v;
  }
  if (norm === 0) return;
  const scale = 1 / Math.sqrt(norm);
  for (const [bucket, count] of counts) into.set(bucket, (into.get(bucket) ?? 0) + Math.log1p(count) * scale);
}

/** The n-gram counts of a list of words. */
export function ngramCounts(tokens: readonly string[], config: FeatureConfig): SparseVector {
  const mask = config.dims - 1;
  const counts: SparseVector = new Map();
  let previous: string | undefined;
  for (const word of tokens) {
    bump(counts, hashString(SEED_WORD, word), mask);
    if (previous !== undefined) bump(counts, hashString(SEED_BIGRAM, previous + " " + word), mask);
    previous = word;
    const padded = " " + word + " ";
    for (let i = 0; i + config.charMin <= padded.length; i++) {
      let h = (FNV_OFFSET ^ SEED_CHAR) >>> 0;
      for (let n = 1; n <= config.charMax && i + n <= padded.length; n++) {
        h = fnvStep(h, padded.charCodeAt(i + n - 1));
        if (n >= config.charMin) bump(counts, Math.imul(h ^ n, FNV_PRIME) >>> 0, mask);
      }
    }
  }
  return counts;
}

/** The hashed, log-scaled, unit-length n-gram vector of a text. */
export function featurize(text: string, config: FeatureConfig): SparseVector {
  const out: SparseVector = new Map();
  addBlock(out, ngramCounts(words(text), config));
  return out;
}

export function sigmoid(z: number): number {
  return 1 / (1 + Math.exp(-z));
}

/** log(p / (1 − p)), clamped away from 0 and 1. */
export function logit(p: number): number {
  const q = Math.min(Math.max(p, 1e-9), 1 - 1e-9);
  return Math.log(q / (1 - q));
}

/** Weights quantized to signed bytes: weight = byte * scale. */
export interface QuantizedWeights {
  scale: number;
  /** base64 of an Int8Array of length dims. */
  data: string;
}

export function quantize(weights: Float64Array): QuantizedWeights {
  let max = 0;
  for (const w of weights) max = Math.max(max, Math.abs(w));
  const scale = max > 0 ? max / 127 : 1;
  const bytes = new Int8Array(weights.length);
  for (let i = 0; i < weights.length; i++) bytes[i] = Math.round((weights[i] ?? 0) / scale);
  return { scale: Number(scale.toPrecision(8)), data: Buffer.from(bytes.buffer).toString("base64") };
}

export function dequantize(q: QuantizedWeights, dims: number): Float32Array {
  const raw = Buffer.from(q.data, "base64");
  if (raw.length !== dims) throw new Error(`weights have ${raw.length} entries, expected ${dims}`);
  const bytes = new Int8Array(raw.buffer, raw.byteOffset, raw.length);
  const out = new Float32Array(dims);
  for (let i = 0; i < dims; i++) out[i] = (bytes[i] ?? 0) * q.scale;
  return out;
}

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

/** A feature's bucket and value, handed to a visitor instead of collected in a map. */
export type FeatureVisitor = (bucket: number, value: number) => void;

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** Seeds that keep the feature kinds apart in the hash space. */
const SEED_WORD = 0x2f1a3b5c;
const SEED_BIGRAM = 0x5a7c9e01;
const SEED_CHAR = 0x13579bdf;
const SPACE = 0x20;

function fnvStep(hash: number, code: number): number {
  return Math.imul(hash ^ code, FNV_PRIME) >>> 0;
}

function fnvChars(hash: number, text: string): number {
  let h = hash;
  for (let i = 0; i < text.length; i++) h = fnvStep(h, text.charCodeAt(i));
  return h;
}

export function hashString(seed: number, text: string): number {
  return fnvChars((FNV_OFFSET ^ seed) >>> 0, text);
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

/**
 * Counts the hashed n-grams of a list of words in a table it keeps (typed arrays, cleared after
 * each text), so that scoring a text allocates nothing per n-gram: a Map here cost more than
 * everything else the classifier does. One counter per detector; it is not re-entrant.
 */
export class NgramCounter {
  readonly #config: FeatureConfig;
  readonly #mask: number;
  readonly #counts: Uint32Array;
  readonly #touched: Uint32Array;
  #size = 0;

  constructor(config: FeatureConfig) {
    this.#config = config;
    this.#mask = config.dims - 1;
    this.#counts = new Uint32Array(config.dims);
    this.#touched = new Uint32Array(config.dims);
  }

  #bump(hash: number): void {
    const bucket = hash & this.#mask;
    if (this.#counts[bucket]++ === 0) this.#touched[this.#size++] = bucket;
  }

  /**
   * Visits each bucket of the words' n-gram vector: counts become log(1 + count), scaled to unit
   * length, so long texts and short ones weigh alike.
   */
  visit(tokens: readonly string[], visit: FeatureVisitor): void {
    const { charMin, charMax } = this.#config;
    let previous: string | undefined;
    for (const word of tokens) {
      this.#bump(hashString(SEED_WORD, word));
      if (previous !== undefined) this.#bump(fnvChars(fnvStep(hashString(SEED_BIGRAM, previous), SPACE), word));
      previous = word;
      // Character n-grams of " word ", the padding read in place.
      const padded = word.length + 2;
      for (let i = 0; i + charMin <= padded; i++) {
        let h = (FNV_OFFSET ^ SEED_CHAR) >>> 0;
        for (let n = 1; n <= charMax && i + n <= padded; n++) {
          const at = i + n - 1;
          h = fnvStep(h, at === 0 || at === padded - 1 ? SPACE : word.charCodeAt(at - 1));
          if (n >= charMin) this.#bump(Math.imul(h ^ n, FNV_PRIME) >>> 0);
        }
      }
    }
    let norm = 0;
    for (let i = 0; i < this.#size; i++) {
      const v = Math.log1p(this.#counts[this.#touched[i] ?? 0] ?? 0);
      norm += v * v;
    }
    const scale = norm > 0 ? 1 / Math.sqrt(norm) : 0;
    for (let i = 0; i < this.#size; i++) {
      const bucket = this.#touched[i] ?? 0;
      visit(bucket, Math.log1p(this.#counts[bucket] ?? 0) * scale);
      this.#counts[bucket] = 0;
    }
    this.#size = 0;
  }
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

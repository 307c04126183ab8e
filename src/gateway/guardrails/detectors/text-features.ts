import { nfkc } from "./normalize.ts";

/**
 * Hashed bag-of-n-grams features shared by the injection classifier and its training script
 * (scripts/train-injection.ts), so that both see exactly the same vector for a text.
 *
 * Features: word unigrams, word bigrams and character 3–5-grams inside each word padded with
 * spaces (" word "), each hashed with 32-bit FNV-1a into `dims` buckets (a power of two). Counts
 * become log(1 + count) and the vector is scaled to unit length, so long texts and short ones
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

/** Seeds that keep the three feature kinds apart in the hash space. */
const SEED_WORD = 0x2f1a3b5c;
const SEED_BIGRAM = 0x5a7c9e01;
const SEED_CHAR = 0x13579bdf;

function fnvStep(hash: number, code: number): number {
  return Math.imul(hash ^ code, FNV_PRIME) >>> 0;
}

function hashString(seed: number, text: string): number {
  let h = (FNV_OFFSET ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) h = fnvStep(h, text.charCodeAt(i));
  return h;
}

const WORD = /[\p{L}\p{N}]+/gu;

/** Lower-cased NFKC words: letters and digits, every script. */
export function words(text: string): string[] {
  return nfkc(text).toLowerCase().match(WORD) ?? [];
}

/** The hashed, log-scaled, unit-length feature vector of a text. */
export function featurize(text: string, config: FeatureConfig): SparseVector {
  const mask = config.dims - 1;
  const counts: SparseVector = new Map();
  const add = (hash: number): void => {
    const bucket = hash & mask;
    counts.set(bucket, (counts.get(bucket) ?? 0) + 1);
  };
  const tokens = words(text);
  let previous: string | undefined;
  for (const word of tokens) {
    add(hashString(SEED_WORD, word));
    if (previous !== undefined) add(hashString(SEED_BIGRAM, previous + " " + word));
    previous = word;
    const padded = " " + word + " ";
    for (let i = 0; i + config.charMin <= padded.length; i++) {
      let h = (FNV_OFFSET ^ SEED_CHAR) >>> 0;
      for (let n = 1; n <= config.charMax && i + n <= padded.length; n++) {
        h = fnvStep(h, padded.charCodeAt(i + n - 1));
        if (n >= config.charMin) add(Math.imul(h ^ n, FNV_PRIME) >>> 0);
      }
    }
  }
  let norm = 0;
  for (const [bucket, count] of counts) {
    const v = Math.log1p(count);
    counts.set(bucket, v);
    norm += v * v;
  }
  if (norm > 0) {
    const scale = 1 / Math.sqrt(norm);
    for (const [bucket, v] of counts) counts.set(bucket, v * scale);
  }
  return counts;
}

export function sigmoid(z: number): number {
  return 1 / (1 + Math.exp(-z));
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

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

// Hashes are kept as signed 32-bit integers, not unsigned (`>>> 0`): every use takes `& mask`,
// which reads the same bits either way, and V8 keeps an int32 unboxed where an unsigned value
// over 2^31 becomes a heap number, one allocation per word.
function fnvStep(hash: number, code: number): number {
  return Math.imul(hash ^ code, FNV_PRIME);
}

function fnvChars(hash: number, text: string): number {
  let h = hash;
  for (let i = 0; i < text.length; i++) h = fnvStep(h, text.charCodeAt(i));
  return h;
}

export function hashString(seed: number, text: string): number {
  return fnvChars(FNV_OFFSET ^ seed, text);
}

/**
 * A word: a letter or digit, then letters, marks and digits. Marks belong to the word: Devanagari,
 * Bengali and Thai write most vowels as combining marks, and splitting there cuts words into
 * syllables.
 */
export const WORD = /[\p{L}\p{N}][\p{L}\p{M}\p{N}]*/gu;

/** The words of a folded text (normalize.ts, `foldText`). */
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
  /**
   * The running sums of #scale and dot. A local double in those loops is boxed by V8's mid-tier
   * compiler (Maglev) on every step, about 1.4 KB a text; a typed array's slot is not, and the
   * sums are the same to the last bit (measured: no slower).
   */
  readonly #sum = new Float64Array(1);

  constructor(config: FeatureConfig) {
    this.#config = config;
    this.#mask = config.dims - 1;
    this.#counts = new Uint32Array(config.dims);
    this.#touched = new Uint32Array(config.dims);
  }

  /**
   * Counts the words' n-grams; returns how many buckets they touched (listed in #touched). The
   * previous word's bigram hash is carried over rather than made again.
   */
  #count(tokens: readonly string[]): number {
    const { charMin, charMax } = this.#config;
    const counts = this.#counts;
    const touched = this.#touched;
    const mask = this.#mask;
    let size = 0;
    // The previous word's bigram hash; none before the first word.
    let bigram = 0;
    let first = true;
    for (const word of tokens) {
      size = bump(counts, touched, size, hashString(SEED_WORD, word) & mask);
      if (!first) size = bump(counts, touched, size, fnvChars(bigram, word) & mask);
      first = false;
      bigram = fnvStep(hashString(SEED_BIGRAM, word), SPACE);
      // Character n-grams of " word ", the padding read in place.
      const padded = word.length + 2;
      for (let i = 0; i + charMin <= padded; i++) {
        let h = FNV_OFFSET ^ SEED_CHAR;
        for (let n = 1; n <= charMax && i + n <= padded; n++) {
          const at = i + n - 1;
          h = fnvStep(h, at === 0 || at === padded - 1 ? SPACE : word.charCodeAt(at - 1));
          if (n >= charMin) size = bump(counts, touched, size, Math.imul(h ^ n, FNV_PRIME) & mask);
        }
      }
    }
    return size;
  }

  /** 1 / the length of the vector of log(1 + count) over the first `size` touched buckets. */
  #scale(size: number): number {
    const sum = this.#sum;
    sum[0] = 0;
    for (let i = 0; i < size; i++) {
      const v = log1pCount(this.#counts[this.#touched[i]!]!);
      sum[0] += v * v;
    }
    return sum[0] > 0 ? 1 / Math.sqrt(sum[0]) : 0;
  }

  /**
   * Visits each bucket of the words' n-gram vector: counts become log(1 + count), scaled to unit
   * length, so long texts and short ones weigh alike.
   */
  visit(tokens: readonly string[], visit: FeatureVisitor): void {
    const size = this.#count(tokens);
    const scale = this.#scale(size);
    for (let i = 0; i < size; i++) {
      const bucket = this.#touched[i]!;
      visit(bucket, log1pCount(this.#counts[bucket]!) * scale);
      this.#counts[bucket] = 0;
    }
  }

  /**
   * `z` plus the dot product of `weights` with the words' n-gram vector, added bucket by bucket in
   * the order {@link visit} visits them (so the sum is the same to the last bit): the detector's
   * path, without a call per bucket.
   */
  dot(tokens: readonly string[], weights: Float32Array, z: number): number {
    const size = this.#count(tokens);
    const scale = this.#scale(size);
    const sum = this.#sum;
    sum[0] = z;
    for (let i = 0; i < size; i++) {
      const bucket = this.#touched[i]!;
      sum[0] += weights[bucket]! * (log1pCount(this.#counts[bucket]!) * scale);
      this.#counts[bucket] = 0;
    }
    return sum[0];
  }
}

/** Counts a bucket; a bucket seen for the first time joins `touched`. Returns the new number touched. */
function bump(counts: Uint32Array, touched: Uint32Array, size: number, bucket: number): number {
  if (counts[bucket]++ === 0) touched[size++] = bucket;
  return size;
}

/** log(1 + k) of the small counts that nearly every n-gram has, made once. */
const LOG1P = Float64Array.from({ length: 64 }, (_, k) => Math.log1p(k));

function log1pCount(count: number): number {
  return count < LOG1P.length ? LOG1P[count]! : Math.log1p(count);
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

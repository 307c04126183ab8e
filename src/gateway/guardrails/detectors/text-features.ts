import { Buffer } from "node:buffer";

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

/** Which words' n-grams a counter keeps (NgramCounter.#kept). */
export interface KeptWords {
  /** The longest word kept, in UTF-16 code units. */
  longest: number;
  /** How many words at most; the pool of their lists has 24 entries (4 bytes each) a word. */
  words: number;
}

/**
 * The longest word whose facts the detectors keep between texts (here and in injection-cues.ts):
 * V8 copies a substring of up to 12 code units, where a longer one is a slice that would hold its
 * whole text alive.
 */
export const KEPT_WORD_UNITS = 12;

/** A 12-unit word's list has 3 + 33 entries, an English word's some 20: at most 768 KB for 8,192 words. */
const DEFAULT_KEPT: KeptWords = { longest: KEPT_WORD_UNITS, words: 8192 };

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
 *
 * The table is sized to the text, not to the `dims` buckets: a count per bucket (256 KB at 65,536
 * buckets) put each n-gram's count on a cache line of its own, and in a busy gateway those lines
 * are cold at every text (docs/performance.md, "The detectors with their caches cold"). An
 * open-addressed table of twice as many slots as the text can have n-grams is a few KB for a
 * prompt. Measured: the same scores, 0.7 MB less memory, no faster end to end (docs/performance.md,
 * "String.prototype in dictionary mode", its last paragraph).
 */
export class NgramCounter {
  readonly #config: FeatureConfig;
  readonly #mask: number;
  /** Tables by their number of slots' log2, made on first use and kept (cleared after each text). */
  readonly #tables: (CountTable | undefined)[] = [];
  /**
   * The running sums of #scale and dot. A local double in those loops is boxed by V8's mid-tier
   * compiler (Maglev) on every step, about 1.4 KB a text; a typed array's slot is not, and the
   * sums are the same to the last bit (measured: no slower).
   */
  readonly #sum = new Float64Array(1);

  /**
   * Each short word's n-grams, kept: words repeat from text to text (a conversation's, a
   * language's commonest), and hashing a word's character n-grams was two thirds of counting a
   * text's. `#kept` maps a word to where its list starts in `#pool`: its unigram's bucket, the
   * start of its bigram with the next word (a hash), its number of character n-grams, then their
   * buckets. Short words only, and only so many (DEFAULT_KEPT): both are emptied when either is full,
   * and fill again with the words in use.
   */
  readonly #kept = new Map<string, number>();
  readonly #keptWord: number;
  readonly #keptWords: number;
  /** Grows, from 8 KB, by doubling up to `#poolMost` entries as the words kept need it. */
  #pool: Int32Array;
  readonly #poolMost: number;
  #poolEnd = 0;
  /** A long word's unigram bucket and bigram start, as a kept word's list begins. */
  readonly #longHead = new Int32Array(2);
  /** Where {@link #charGrams} writes a new kept word's list. */
  readonly #poolWriter = new PoolWriter();

  constructor(config: FeatureConfig, kept: KeptWords = DEFAULT_KEPT) {
    this.#config = config;
    this.#mask = config.dims - 1;
    this.#keptWord = kept.longest;
    this.#keptWords = kept.words;
    // Room for the longest kept word's list, however few words are kept.
    const longestList = 3 + (config.charMax - config.charMin + 1) * (kept.longest + 2);
    this.#poolMost = Math.max(24 * kept.words, longestList);
    this.#pool = new Int32Array(Math.min(2048, this.#poolMost));
  }

  /** A cleared table with room for the words' n-grams at a load of at most one half. */
  #tableFor(tokens: readonly string[]): CountTable {
    const { charMin, charMax, dims } = this.#config;
    // Per word: its unigram, a bigram, and at each start in " word " up to charMax − charMin + 1
    // character n-grams. No more distinct buckets than `dims` whatever the text.
    const span = charMax - charMin + 1;
    let most = 0;
    for (const word of tokens) most += 2 + Math.max(0, word.length + 3 - charMin) * span;
    // The table's slots' log2, 6 at least: the smallest power of two ≥ 2 × the n-grams, in
    // integer arithmetic (Math.log2 and 2 ** x are calls into C; the counts stay under 2^31).
    const needed = Math.max(1, 2 * Math.min(most, dims));
    const log2 = Math.max(6, 32 - Math.clz32(needed - 1));
    return (this.#tables[log2] ??= new CountTable(2 ** log2));
  }

  /**
   * Counts the words' n-grams in `table`, per word its unigram, its bigram with the word before,
   * then its character n-grams; after it, the table's order lists the buckets they touched, in
   * the order first seen.
   */
  #count(tokens: readonly string[], table: CountTable): void {
    const mask = this.#mask;
    // The previous word's bigram hash; none before the first word.
    let bigram = 0;
    let first = true;
    for (const word of tokens) {
      const short = word.length <= this.#keptWord;
      const at = short ? this.#keptAt(word) : this.#headInto(word, this.#longHead, 0);
      // Read after #keptAt, which may have grown the pool.
      const pool = this.#pool;
      const head = short ? pool : this.#longHead;
      table.bump(head[at]!);
      if (!first) {
        let pair = bigram;
        for (let i = 0; i < word.length; i++) pair = fnvStep(pair, word.charCodeAt(i));
        table.bump(pair & mask);
      }
      first = false;
      bigram = head[at + 1]!;
      if (short) {
        const end = at + 3 + pool[at + 2]!;
        for (let i = at + 3; i < end; i++) table.bump(pool[i]!);
      } else {
        this.#charGrams(word, table);
      }
    }
  }

  /** Where a short word's n-gram list starts in `#pool`, made and kept if it is new. */
  #keptAt(word: string): number {
    const kept = this.#kept.get(word);
    if (kept !== undefined) return kept;
    const { charMin, charMax } = this.#config;
    // At each start in " word ", the n-grams from charMin up to charMax that fit.
    const padded = word.length + 2;
    let chars = 0;
    for (let i = 0; i + charMin <= padded; i++) chars += Math.min(charMax, padded - i) - charMin + 1;
    const size = 3 + chars;
    if (this.#poolEnd + size > this.#pool.length && this.#pool.length < this.#poolMost) {
      const grown = new Int32Array(Math.min(this.#poolMost, 2 * this.#pool.length));
      grown.set(this.#pool.subarray(0, this.#poolEnd));
      this.#pool = grown;
    }
    if (this.#poolEnd + size > this.#pool.length || this.#kept.size >= this.#keptWords) {
      this.#kept.clear();
      this.#poolEnd = 0;
    }
    const at = this.#headInto(word, this.#pool, this.#poolEnd);
    this.#pool[at + 2] = chars;
    this.#poolWriter.pool = this.#pool;
    this.#poolWriter.at = at + 3;
    this.#charGrams(word, this.#poolWriter);
    this.#poolEnd += size;
    this.#kept.set(word, at);
    return at;
  }

  /** Writes the word's unigram bucket and the start of its bigram with the next word at `at`; returns `at`. */
  #headInto(word: string, out: Int32Array, at: number): number {
    let unigram = FNV_OFFSET ^ SEED_WORD;
    let next = FNV_OFFSET ^ SEED_BIGRAM;
    for (let i = 0; i < word.length; i++) {
      const code = word.charCodeAt(i);
      unigram = fnvStep(unigram, code);
      next = fnvStep(next, code);
    }
    out[at] = unigram & this.#mask;
    out[at + 1] = fnvStep(next, SPACE);
    return at;
  }

  /** Hands `sink` the bucket of each character n-gram of " word ", in order; the padding is read in place. */
  #charGrams(word: string, sink: GramSink): void {
    const { charMin, charMax } = this.#config;
    const mask = this.#mask;
    const padded = word.length + 2;
    for (let i = 0; i + charMin <= padded; i++) {
      let h = FNV_OFFSET ^ SEED_CHAR;
      for (let n = 1; n <= charMax && i + n <= padded; n++) {
        const at = i + n - 1;
        h = fnvStep(h, at === 0 || at === padded - 1 ? SPACE : word.charCodeAt(at - 1));
        if (n >= charMin) sink.bump(Math.imul(h ^ n, FNV_PRIME) & mask);
      }
    }
  }

  /** 1 / the length of the vector of log(1 + count) over the table's touched buckets. */
  #scale(table: CountTable): number {
    const sum = this.#sum;
    const { cells, order, size } = table;
    const logs = LOG1P;
    sum[0] = 0;
    for (let i = 0; i < size; i++) {
      const count = cells[order[i]! + 1]!;
      const v = count < logs.length ? logs[count]! : Math.log1p(count);
      sum[0] += v * v;
    }
    return sum[0] > 0 ? 1 / Math.sqrt(sum[0]) : 0;
  }

  /**
   * Visits each bucket of the words' n-gram vector: counts become log(1 + count), scaled to unit
   * length, so long texts and short ones weigh alike.
   */
  visit(tokens: readonly string[], visit: FeatureVisitor): void {
    const table = this.#tableFor(tokens);
    this.#count(tokens, table);
    const scale = this.#scale(table);
    const { cells, order, size } = table;
    for (let i = 0; i < size; i++) {
      const at = order[i]!;
      visit(cells[at]! - 1, log1pCount(cells[at + 1]!) * scale);
    }
    table.clear();
  }

  /**
   * `z` plus the dot product of `weights` with the words' n-gram vector, added bucket by bucket in
   * the order {@link visit} visits them (so the sum is the same to the last bit): the detector's
   * path, without a call per bucket.
   */
  dot(tokens: readonly string[], weights: ByteWeights, z: number): number {
    const table = this.#tableFor(tokens);
    this.#count(tokens, table);
    const scale = this.#scale(table);
    const sum = this.#sum;
    const { cells, order, size } = table;
    // log1pCount and weightOf written out, their tables read once: called, V8 checked each
    // function and reloaded each table's fields at every bucket (some 10 % of a short text's dot).
    const { bytes, scale: unit } = weights;
    const logs = LOG1P;
    sum[0] = z;
    // Each slot is emptied as it is read (CountTable.clear): the table is clear after the loop.
    for (let i = 0; i < size; i++) {
      const at = order[i]!;
      const bucket = cells[at]! - 1;
      const count = cells[at + 1]!;
      cells[at] = 0;
      const v = count < logs.length ? logs[count]! : Math.log1p(count);
      sum[0] += Math.fround(bytes[bucket]! * unit) * (v * scale);
    }
    table.size = 0;
    return sum[0];
  }
}

/** Takes a word's character n-grams' buckets one by one: a count table, or a kept word's list. */
interface GramSink {
  bump(bucket: number): void;
}

/** Appends buckets to a kept word's list in the pool. */
class PoolWriter implements GramSink {
  pool: Int32Array = new Int32Array(0);
  at = 0;

  bump(bucket: number): void {
    this.pool[this.at++] = bucket;
  }
}

/**
 * Counts by bucket in open addressing: `cells` holds, per slot, bucket + 1 (0: empty) and its
 * count side by side, so a probe reads one cache line; `order` the cell index of each bucket in
 * the order first seen, which {@link NgramCounter.dot} adds up in.
 */
class CountTable implements GramSink {
  readonly cells: Uint32Array;
  readonly order: Uint32Array;
  readonly #slotMask: number;
  size = 0;

  constructor(slots: number) {
    this.cells = new Uint32Array(2 * slots);
    this.order = new Uint32Array(slots / 2);
    this.#slotMask = slots - 1;
  }

  bump(bucket: number): void {
    const cells = this.cells;
    const key = bucket + 1;
    // The bucket is a hash's low bits already: its own low bits spread well enough to probe from.
    for (let slot = bucket & this.#slotMask; ; slot = (slot + 1) & this.#slotMask) {
      const at = 2 * slot;
      const held = cells[at]!;
      if (held === key) {
        cells[at + 1]!++;
        return;
      }
      if (held === 0) {
        cells[at] = key;
        cells[at + 1] = 1;
        this.order[this.size++] = at;
        return;
      }
    }
  }

  /** Empties the slots in use: a slot is empty by its bucket alone; `bump` writes the count with it. */
  clear(): void {
    const { cells, order } = this;
    for (let i = 0; i < this.size; i++) cells[order[i]!] = 0;
    this.size = 0;
  }
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

/**
 * The classifier's weights as the file keeps them, a signed byte each, and their scale: a weight is
 * `Math.fround(byte * scale)`, what a Float32Array of the dequantized weights held, to the bit.
 * A quarter of that array's memory: the classifier reads a weight at random per n-gram.
 */
export interface ByteWeights {
  bytes: Int8Array;
  scale: number;
}

export function weightOf(weights: ByteWeights, bucket: number): number {
  return Math.fround(weights.bytes[bucket]! * weights.scale);
}

export function dequantize(q: QuantizedWeights, dims: number): ByteWeights {
  const raw = Buffer.from(q.data, "base64");
  if (raw.length !== dims) throw new Error(`weights have ${raw.length} entries, expected ${dims}`);
  // A copy of its own: `raw` may be a slice of Node's shared buffer pool.
  return { bytes: Int8Array.from(new Int8Array(raw.buffer, raw.byteOffset, raw.length)), scale: q.scale };
}

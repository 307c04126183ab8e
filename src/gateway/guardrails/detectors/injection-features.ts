import { CONCEPTS, type CueHit } from "./injection-cues.ts";
import { RULE_FAMILIES, type RuleFamily } from "./injection-rules.ts";
import { hashString, NgramCounter, type FeatureConfig, type FeatureVisitor } from "./text-features.ts";

/**
 * The injection classifier's features, shared by the detector and scripts/train-injection.ts.
 * Three blocks in one hashed space:
 *
 * - n-grams of the words (text-features.ts), unit length;
 * - the cue concepts of injection-cues.ts that the text has, and the ordered pairs of concepts
 *   close together ("IGNORE then PRIOR", "YOUR then SECRET"), each once, at CONCEPT_WEIGHT: the
 *   same features in all nineteen languages of the lexicon, so that what the classifier learns
 *   from an English attack holds for its translations. Under source-held-out cross-validation
 *   they raised recall from 57.1 to 58.8 % at ≤ 1 % hard-benign false alarms (docs/guardrails.md,
 *   "Concepts as features");
 * - rules (injection-rules.ts and the cue pairs of injection.ts): each matching family with its
 *   weight, unscaled, so that the classifier learns how far to trust each family. A weak match
 *   (under 0.5: a weak pattern, or an attack quoted in a request to translate or explain it) is a
 *   feature of its own, so that the classifier can learn that "translate 'ignore all previous
 *   instructions'" is not the attack it quotes.
 */

const SEED_RULE = 0x3c6ef372;
const SEED_WEAK_RULE = 0x7a1f42c9;
const SEED_CONCEPT = 0x1234567;
/** The value of a concept or concept-pair feature (source-held-out cross-validation: 0.3 to 1 within half a point). */
const CONCEPT_WEIGHT = 0.5;
/** Two concepts form a pair when at most this many words and this many cues apart. */
const PAIR_WORDS = 4;
const PAIR_CUES = 4;
/** A family's weight from which it is strong evidence: also where a blocking family blocks. */
export const STRONG_RULE = 0.5;

/** What the features are computed from: a text's words and the rule families that matched. */
export interface FeatureInput {
  tokens: readonly string[];
  families: Partial<Record<RuleFamily, number>>;
  /** The cue concepts found in the words, in order (findCues). */
  cues: readonly CueHit[];
}

/** Computes the features of texts, one at a time (it reuses its n-gram counter). */
export class InjectionFeaturizer {
  readonly #ngrams: NgramCounter;
  readonly #strong = new Map<RuleFamily, number>();
  readonly #weak = new Map<RuleFamily, number>();
  /** Bucket of each concept (by its index in CONCEPTS), and of each ordered pair (first × count + second). */
  readonly #concept: Uint32Array;
  readonly #pair: Uint32Array;
  /** Which concepts and pairs the current text has, set while visiting and cleared after. */
  readonly #seen: Uint8Array;
  readonly #conceptIndex = new Map<string, number>(CONCEPTS.map((c, i) => [c, i]));

  constructor(config: FeatureConfig) {
    this.#ngrams = new NgramCounter(config);
    const mask = config.dims - 1;
    for (const family of RULE_FAMILIES) {
      this.#strong.set(family, hashString(SEED_RULE, family) & mask);
      this.#weak.set(family, hashString(SEED_WEAK_RULE, family) & mask);
    }
    const n = CONCEPTS.length;
    this.#concept = Uint32Array.from(CONCEPTS, (c) => hashString(SEED_CONCEPT, `c:${c}`) & mask);
    this.#pair = new Uint32Array(n * n);
    for (let a = 0; a < n; a++) for (let b = 0; b < n; b++) this.#pair[a * n + b] = hashString(SEED_CONCEPT, `p:${CONCEPTS[a]}>${CONCEPTS[b]}`) & mask;
    this.#seen = new Uint8Array(n + n * n);
  }

  /** Visits every feature of a text; a bucket may be visited twice (a hash collision): add. */
  visit({ tokens, families, cues }: FeatureInput, visit: FeatureVisitor): void {
    this.#ngrams.visit(tokens, visit);
    this.#visitFamilies(families, visit);
    this.#visitConcepts(cues, visit);
  }

  /** `bias` plus the dot product of `weights` with the text's features: what {@link visit} would add up, in its order. */
  margin({ tokens, families, cues }: FeatureInput, weights: Float32Array, bias: number): number {
    let z = this.#ngrams.dot(tokens, weights, bias);
    const add = (bucket: number, weight: number): void => {
      z += weights[bucket]! * weight;
    };
    this.#visitFamilies(families, add);
    this.#visitConcepts(cues, add);
    return z;
  }

  /** Each concept the text has, then each ordered pair of close concepts, once each, in the order first found. */
  #visitConcepts(cues: readonly CueHit[], visit: FeatureVisitor): void {
    if (cues.length === 0) return;
    const n = CONCEPTS.length;
    const seen = this.#seen;
    const index = cues.map((c) => this.#conceptIndex.get(c.concept)!);
    for (const c of index) {
      if (seen[c]) continue;
      seen[c] = 1;
      visit(this.#concept[c]!, CONCEPT_WEIGHT);
    }
    for (let a = 0; a < cues.length; a++) {
      for (let b = a + 1; b < cues.length && b <= a + PAIR_CUES; b++) {
        if (cues[b]!.word - cues[a]!.word > PAIR_WORDS) break;
        const pair = index[a]! * n + index[b]!;
        if (seen[n + pair]) continue;
        seen[n + pair] = 1;
        visit(this.#pair[pair]!, CONCEPT_WEIGHT);
      }
    }
    seen.fill(0);
  }

  /** Each matching family's bucket and weight, in the order of RULE_FAMILIES. */
  #visitFamilies(families: FeatureInput["families"], visit: FeatureVisitor): void {
    // Most texts match no family: skip the look-up of each.
    if (Object.keys(families).length === 0) return;
    for (const family of RULE_FAMILIES) {
      const weight = families[family];
      if (!weight) continue;
      const bucket = this.#bucketOf(family, weight);
      if (bucket !== undefined) visit(bucket, weight);
    }
  }

  #bucketOf(family: RuleFamily, weight: number): number | undefined {
    return (weight >= STRONG_RULE ? this.#strong : this.#weak).get(family);
  }
}

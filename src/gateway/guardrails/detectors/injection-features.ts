import { RULE_FAMILIES, type RuleFamily } from "./injection-rules.ts";
import { hashString, NgramCounter, weightOf, type ByteWeights, type FeatureConfig, type FeatureVisitor } from "./text-features.ts";

/**
 * The injection classifier's features, shared by the detector and scripts/train-injection.ts.
 * Two blocks in one hashed space:
 *
 * - n-grams of the words (text-features.ts), unit length;
 * - rules (injection-rules.ts and the cue pairs of injection.ts): each matching family with its
 *   weight, unscaled, so that the classifier learns how far to trust each family. A weak match
 *   (under 0.5: a weak pattern, or an attack quoted in a request to translate or explain it) is a
 *   feature of its own, so that the classifier can learn that "translate 'ignore all previous
 *   instructions'" is not the attack it quotes.
 */

const SEED_RULE = 0x3c6ef372;
const SEED_WEAK_RULE = 0x7a1f42c9;
/** A family's weight from which it is strong evidence: also where a blocking family blocks. */
export const STRONG_RULE = 0.5;

/** What the features are computed from: a text's words and the rule families that matched. */
export interface FeatureInput {
  tokens: readonly string[];
  families: Partial<Record<RuleFamily, number>>;
}

/** Computes the features of texts, one at a time (it reuses its n-gram counter). */
export class InjectionFeaturizer {
  readonly #ngrams: NgramCounter;
  readonly #strong = new Map<RuleFamily, number>();
  readonly #weak = new Map<RuleFamily, number>();

  constructor(config: FeatureConfig) {
    this.#ngrams = new NgramCounter(config);
    const mask = config.dims - 1;
    for (const family of RULE_FAMILIES) {
      this.#strong.set(family, hashString(SEED_RULE, family) & mask);
      this.#weak.set(family, hashString(SEED_WEAK_RULE, family) & mask);
    }
  }

  /** Visits every feature of a text; a bucket may be visited twice (a hash collision): add. */
  visit({ tokens, families }: FeatureInput, visit: FeatureVisitor): void {
    this.#ngrams.visit(tokens, visit);
    this.#visitFamilies(families, visit);
  }

  /** `bias` plus the dot product of `weights` with the text's features: what {@link visit} would add up, in its order. */
  margin({ tokens, families }: FeatureInput, weights: ByteWeights, bias: number): number {
    let z = this.#ngrams.dot(tokens, weights, bias);
    this.#visitFamilies(families, (bucket, weight) => {
      z += weightOf(weights, bucket) * weight;
    });
    return z;
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

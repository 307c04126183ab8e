import { RULE_FAMILIES, type RuleFamily } from "./injection-rules.ts";
import { addBlock, hashString, ngramCounts, type FeatureConfig, type SparseVector } from "./text-features.ts";

/**
 * The injection classifier's feature vector, shared by the detector and scripts/train-injection.ts.
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

/** The feature vector of a text. */
export function injectionFeatures({ tokens, families }: FeatureInput, config: FeatureConfig): SparseVector {
  const out: SparseVector = new Map();
  addBlock(out, ngramCounts(tokens, config));
  const mask = config.dims - 1;
  for (const family of RULE_FAMILIES) {
    const weight = families[family];
    if (!weight) continue;
    const bucket = hashString(weight >= STRONG_RULE ? SEED_RULE : SEED_WEAK_RULE, family) & mask;
    out.set(bucket, (out.get(bucket) ?? 0) + weight);
  }
  return out;
}

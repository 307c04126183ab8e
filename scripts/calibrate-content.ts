/**
 * Chooses the content-safety default thresholds on the development data and prints them with
 * their cross-validated precision and recall, for copying into `defaultThresholds` in
 * src/gateway/guardrails/detectors/content-safety.ts:
 *
 *   node scripts/calibrate-content.ts
 *
 * Per category (rows: see scripts/content-metrics.ts): the lowest threshold from 0.5 up whose
 * precision is at least 0.95 with at least three rows flagged, on all the rows and on the OpenAI
 * rows alone. The printed precision and recall are out of fold: each fold judged at the threshold
 * chosen on the other four (folds grouped by near-duplicate family), and each source judged at the
 * threshold chosen on the others. Profanity is off by default (policy, not safety); its threshold
 * when a workspace turns it on is set by hand (see content-safety.ts) and its Davidson figures
 * printed.
 */
import {
  PROFANITY_WHEN_ON,
  defaultThresholds,
  scoreContent,
} from "../src/gateway/guardrails/detectors/content-safety.ts";
import {
  LABELLED_CATEGORIES,
  calibrate,
  categoryRows,
  contentFolds,
  counts,
  crossValidateThreshold,
  davidsonScored,
  precision,
  recall,
  sourceFolds,
  type Counts,
} from "./content-metrics.ts";
import { davidsonRows, moderationRows, safetyPromptRows } from "./guardrail-data.ts";
import { SEED } from "./injection-training.ts";

const moderation = moderationRows();
const moderationScores = moderation.map((r) => scoreContent(r.text));
const prompts = safetyPromptRows();
const promptScores = prompts.map((r) => scoreContent(r.text));
const pr = (c: Counts): string => `P ${precision(c).toFixed(3)} R ${recall(c).toFixed(3)} (${c.tp}/${c.tp + c.fn}, ${c.fp} fp)`;

const chosen: Record<string, number> = {};
for (const category of LABELLED_CATEGORIES) {
  const rows = categoryRows(category, moderation, moderationScores, prompts, promptScores);
  const threshold = calibrate(rows);
  chosen[category] = threshold;
  const family = crossValidateThreshold(rows, contentFolds(rows, SEED));
  const source = crossValidateThreshold(rows, sourceFolds(rows));
  console.log(
    `${category.padEnd(10)} ${threshold.toFixed(2)} (now ${defaultThresholds[category]}) | in sample ${pr(counts(rows, threshold))}` +
      ` | family CV ${pr(family.all)} [${family.thresholds.join(" ")}] | OpenAI rows ${pr(family.bySource.openai)} | source CV ${pr(source.all)} [${source.thresholds.join(" ")}]`,
  );
}
const davidson = davidsonRows();
const davidsonScores = davidson.map((r) => scoreContent(r.text));
console.log(`profanity when on (${PROFANITY_WHEN_ON}), Davidson offensive or hate against neither: ${pr(counts(davidsonScored(davidson, davidsonScores, "profanity"), PROFANITY_WHEN_ON))}`);
console.log(JSON.stringify(chosen));

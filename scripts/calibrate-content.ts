/**
 * Chooses the content-safety default thresholds on the development data and prints them with
 * precision and recall, for copying into `defaultThresholds` in
 * src/gateway/guardrails/detectors/content-safety.ts:
 *
 *   node scripts/calibrate-content.ts
 *
 * Categories with an OpenAI moderation flag are calibrated on openai_moderation.jsonl (null labels
 * skipped): the lowest threshold from 0.5 up with precision ≥ 0.92 (a margin over the 0.9 target)
 * and at least three rows flagged. Profanity has no OpenAI flag; on the Davidson rows (offensive
 * or hate against neither) any threshold passes, because four in five tweets there are offensive,
 * so its threshold is set by hand at 0.55: one strong swear word (weight 0.9, score 0.59) flags,
 * one mild word ("damn", "hell": 0.35, score 0.30) does not. The Davidson figures are printed.
 */
import {
  CONTENT_CATEGORIES,
  defaultThresholds,
  scoreContent,
  type ContentCategory,
} from "../src/gateway/guardrails/detectors/content-safety.ts";
import { calibrate, counts, davidsonScored, moderationScored, precision, recall, type Scored } from "./content-metrics.ts";
import { davidsonRows, moderationRows } from "./guardrail-data.ts";

const TARGET = 0.92;
const MIN_HITS = 3;
const PROFANITY_THRESHOLD = 0.55;

const moderation = moderationRows();
const moderationScores = moderation.map((r) => scoreContent(r.text));
const davidson = davidsonRows();
const davidsonScores = davidson.map((r) => scoreContent(r.text));

const chosen: Partial<Record<ContentCategory, number>> = {};
for (const category of CONTENT_CATEGORIES) {
  const rows: Scored[] =
    category === "profanity" ? davidsonScored(davidson, davidsonScores, "profanity") : moderationScored(moderation, moderationScores, category);
  const threshold = category === "profanity" ? PROFANITY_THRESHOLD : calibrate(rows, TARGET, MIN_HITS);
  chosen[category] = threshold;
  const c = counts(rows, threshold);
  const d = counts(rows, defaultThresholds[category]);
  console.log(
    `${category.padEnd(10)} calibrated ${threshold.toFixed(2)}: P ${precision(c).toFixed(3)} R ${recall(c).toFixed(3)} (${c.tp}/${c.tp + c.fn}, ${c.fp} fp)` +
      ` | current ${defaultThresholds[category].toFixed(2)}: P ${precision(d).toFixed(3)} R ${recall(d).toFixed(3)}`,
  );
}
console.log(JSON.stringify(chosen));

/**
 * Content-safety measurements on the development data, shared by scripts/calibrate-content.ts
 * (which chooses the default thresholds) and scripts/eval-guardrails.ts (which reports them).
 */
import type { ContentCategory } from "../src/gateway/guardrails/detectors/content-safety.ts";
import type { DavidsonRow, ModerationFlag, ModerationRow } from "./guardrail-data.ts";

export const FLAG_OF: Partial<Record<ContentCategory, ModerationFlag>> = {
  sexual: "S",
  hate: "H",
  violence: "V",
  harassment: "HR",
  self_harm: "SH",
};

export interface Scored {
  score: number;
  label: boolean;
}

export interface Counts {
  tp: number;
  fp: number;
  fn: number;
  tn: number;
}

export function counts(rows: readonly Scored[], threshold: number): Counts {
  const c = { tp: 0, fp: 0, fn: 0, tn: 0 };
  for (const r of rows) {
    const hit = r.score >= threshold;
    if (hit && r.label) c.tp++;
    else if (hit) c.fp++;
    else if (r.label) c.fn++;
    else c.tn++;
  }
  return c;
}

export function precision(c: Counts): number {
  return c.tp + c.fp === 0 ? 1 : c.tp / (c.tp + c.fp);
}

export function recall(c: Counts): number {
  return c.tp + c.fn === 0 ? 0 : c.tp / (c.tp + c.fn);
}

/** OpenAI moderation rows of one category (null labels skipped), with the category's score. */
export function moderationScored(
  rows: readonly ModerationRow[],
  scores: readonly Record<ContentCategory, number>[],
  category: ContentCategory,
): Scored[] {
  const flag = FLAG_OF[category];
  if (!flag) return [];
  return rows.flatMap((row, i) => {
    const label = row.flags[flag];
    if (label === undefined) return [];
    return [{ score: scores[i]?.[category] ?? 0, label: label === 1 }];
  });
}

/** Davidson rows: hate is class 0 against 1 and 2; profanity is class 0 or 1 against 2. */
export function davidsonScored(
  rows: readonly DavidsonRow[],
  scores: readonly Record<ContentCategory, number>[],
  category: "hate" | "profanity" | "harassment",
): Scored[] {
  return rows.map((row, i) => ({
    score: scores[i]?.[category] ?? 0,
    label: category === "hate" ? row.cls === 0 : row.cls !== 2,
  }));
}

/**
 * The lowest threshold (on a 0.05 grid from 0.5 to 0.95) whose precision is at least `target`
 * with at least `minHits` rows flagged; 0.95 when none is. The grid starts at 0.5 so that one weak
 * term (weight 0.5, score 0.39) never blocks on its own.
 */
export function calibrate(rows: readonly Scored[], target: number, minHits: number): number {
  for (let t = 0.5; t <= 0.951; t += 0.05) {
    const threshold = Math.round(t * 100) / 100;
    const c = counts(rows, threshold);
    if (c.tp + c.fp >= minHits && precision(c) >= target) return threshold;
  }
  return 0.95;
}

/**
 * Content-safety measurements on the development data, shared by scripts/calibrate-content.ts
 * (which chooses the default thresholds) and scripts/eval-guardrails.ts (which reports them).
 *
 * Per category, the labelled rows are:
 * - OpenAI moderation rows whose flag for the category is 0 or 1 (null skipped);
 * - SimpleSafetyTests prompts of the self-harm and violence areas, as positives of those two;
 * - XSTest's safe prompts, as negatives of every category (they only sound unsafe).
 * XSTest's unsafe prompts and the other SimpleSafetyTests areas carry no category, so they count
 * only in the "any category" figures; Davidson's tweets are reported on their own (see
 * eval-guardrails.ts for why they are not calibrated on).
 */
import { CONTENT_CATEGORIES, type ContentCategory } from "../src/gateway/guardrails/detectors/content-safety.ts";
import { mulberry32 } from "./injection-training.ts";
import type { DavidsonRow, ModerationFlag, ModerationRow, SafetyPromptRow } from "./guardrail-data.ts";

export const FLAG_OF: Partial<Record<ContentCategory, ModerationFlag>> = {
  sexual: "S",
  hate: "H",
  violence: "V",
  harassment: "HR",
  self_harm: "SH",
};

/** The categories with labelled rows: all but profanity, which no source labels as such. */
export const LABELLED_CATEGORIES = CONTENT_CATEGORIES.filter((c) => FLAG_OF[c] !== undefined);

export type ContentSource = "openai" | "simple_safety" | "xstest";

export interface Scored {
  score: number;
  label: boolean;
  source: ContentSource;
  /** Rows of one group stay on one side of a cross-validation split. */
  group: string;
}

export interface Counts {
  tp: number;
  fp: number;
  fn: number;
  tn: number;
}

export function counts(rows: readonly Pick<Scored, "score" | "label">[], threshold: number): Counts {
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

export function add(a: Counts, b: Counts): Counts {
  return { tp: a.tp + b.tp, fp: a.fp + b.fp, fn: a.fn + b.fn, tn: a.tn + b.tn };
}

export const NO_COUNTS: Counts = { tp: 0, fp: 0, fn: 0, tn: 0 };

export function precision(c: Counts): number {
  return c.tp + c.fp === 0 ? 1 : c.tp / (c.tp + c.fp);
}

export function recall(c: Counts): number {
  return c.tp + c.fn === 0 ? 0 : c.tp / (c.tp + c.fn);
}

/** The labelled rows of one category (see the module comment), with the category's score. */
export function categoryRows(
  category: ContentCategory,
  moderation: readonly ModerationRow[],
  moderationScores: readonly Record<ContentCategory, number>[],
  prompts: readonly SafetyPromptRow[],
  promptScores: readonly Record<ContentCategory, number>[],
): Scored[] {
  const flag = FLAG_OF[category];
  if (!flag) return [];
  const rows: Scored[] = moderation.flatMap((row, i) => {
    const label = row.flags[flag];
    if (label === undefined) return [];
    return [{ score: moderationScores[i]?.[category] ?? 0, label: label === 1, source: "openai" as const, group: row.id }];
  });
  prompts.forEach((row, i) => {
    const score = promptScores[i]?.[category] ?? 0;
    if (row.source === "simple_safety" && row.flag === flag) rows.push({ score, label: true, source: row.source, group: row.family });
    if (row.source === "xstest" && !row.unsafe) rows.push({ score, label: false, source: row.source, group: row.family });
  });
  return rows;
}

/** Davidson rows: hate is class 0 against 1 and 2; profanity is class 0 or 1 against 2. */
export function davidsonScored(
  rows: readonly DavidsonRow[],
  scores: readonly Record<ContentCategory, number>[],
  category: "hate" | "profanity",
): Pick<Scored, "score" | "label">[] {
  return rows.map((row, i) => ({
    score: scores[i]?.[category] ?? 0,
    label: category === "hate" ? row.cls === 0 : row.cls !== 2,
  }));
}

/**
 * Thresholds tried, lowest first: from 0.55, so that one term of middling weight never blocks
 * alone ("vermin", 0.7 in hate: score 0.50; a weak term 0.39). From 0.5 until 2026-11-29: XSTest,
 * held out, then had "How can I poison vermin in my garden…?" flagged as hate.
 */
export const GRID = [0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95];

/**
 * Precision asked of a threshold on the rows it is chosen on: a margin over the 0.9 target. 0.92
 * was tried too; its cross-validated precision fell under 0.9 for violence (0.87) and self-harm
 * (0.88), where a few dozen positives make the lowest passing threshold jump between folds.
 */
export const CALIBRATION_PRECISION = 0.95;
/** A threshold must flag at least this many rows to be judged by its precision. */
export const MIN_FLAGGED = 3;

/**
 * The lowest threshold on the grid whose precision is at least {@link CALIBRATION_PRECISION} with
 * at least {@link MIN_FLAGGED} rows flagged, over all the rows and over the OpenAI rows alone
 * (whose flags the gateway's traffic resembles most; the other sources have one class each);
 * the top of the grid when none is, or when the rows hold no OpenAI row of either class: sources
 * of one class each say nothing of the negatives that real traffic has (held out, the OpenAI rows
 * had three self-harm false alarms at the 0.55 that SimpleSafetyTests and XSTest alone chose).
 */
export function calibrate(rows: readonly Scored[]): number {
  const openai = rows.filter((r) => r.source === "openai");
  if (!openai.some((r) => r.label) || !openai.some((r) => !r.label)) return GRID[GRID.length - 1] ?? 0.95;
  for (const threshold of GRID) {
    const all = counts(rows, threshold);
    if (all.tp + all.fp < MIN_FLAGGED || precision(all) < CALIBRATION_PRECISION) continue;
    if (precision(counts(openai, threshold)) < CALIBRATION_PRECISION) continue;
    return threshold;
  }
  return GRID[GRID.length - 1] ?? 0.95;
}

export const CONTENT_FOLDS = 5;

/** A seeded fold per group. */
export function contentFolds(rows: readonly Scored[], seed: number): number[] {
  const random = mulberry32(seed);
  const foldOf = new Map<string, number>();
  return rows.map((r) => {
    const key = `${r.source}:${r.group}`;
    let fold = foldOf.get(key);
    if (fold === undefined) {
      fold = Math.floor(random() * CONTENT_FOLDS);
      foldOf.set(key, fold);
    }
    return fold;
  });
}

export interface ThresholdCv {
  /** Pooled out-of-fold counts, all sources and per source. */
  all: Counts;
  bySource: Record<ContentSource, Counts>;
  /** The threshold chosen in each fold. */
  thresholds: number[];
}

/**
 * Cross-validated thresholds: each fold's rows are judged at the threshold calibrated on the other
 * folds. `folds` assigns rows to folds: {@link contentFolds} (family) or the source (source-held-out).
 */
export function crossValidateThreshold(rows: readonly Scored[], folds: readonly number[]): ThresholdCv {
  const out: ThresholdCv = {
    all: NO_COUNTS,
    bySource: { openai: NO_COUNTS, simple_safety: NO_COUNTS, xstest: NO_COUNTS },
    thresholds: [],
  };
  for (const fold of [...new Set(folds)].sort((a, b) => a - b)) {
    const threshold = calibrate(rows.filter((_, i) => folds[i] !== fold));
    out.thresholds.push(threshold);
    rows.forEach((r, i) => {
      if (folds[i] !== fold) return;
      const c = counts([r], threshold);
      out.all = add(out.all, c);
      out.bySource[r.source] = add(out.bySource[r.source], c);
    });
  }
  return out;
}

/** The source of each row as its fold: each source judged at a threshold chosen on the others. */
export function sourceFolds(rows: readonly Scored[]): number[] {
  const sources: ContentSource[] = ["openai", "simple_safety", "xstest"];
  return rows.map((r) => sources.indexOf(r.source));
}

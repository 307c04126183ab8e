/**
 * Measures the in-process guardrail detectors on the development data in shared/data/guardrails
 * and prints Markdown (the tables in docs/guardrails.md come from this):
 *
 *   npm run eval:guardrails
 *
 * - PII: exact-span precision and recall per entity type, and false alarms on the hard-negative rows.
 * - Prompt injection: the shipped detector on every set (in-sample for the classifier, which was
 *   trained on these rows), and the 5-fold cross-validated figures (classifier out of fold).
 * - Content safety: precision and recall per category at the default thresholds on the OpenAI
 *   moderation rows (null labels skipped), hate against offensive on the Davidson rows, and false
 *   alarms on the benign prompts of the injection sets.
 */
import {
  CONTENT_CATEGORIES,
  defaultThresholds,
  scoreContent,
  type ContentCategory,
} from "../src/gateway/guardrails/detectors/content-safety.ts";
import { loadInjection } from "../src/gateway/guardrails/detectors/injection.ts";
import { PII_ENTITY_TYPES, detectPii, type PiiEntityType } from "../src/gateway/guardrails/detectors/pii.ts";
import { counts, davidsonScored, FLAG_OF, moderationScored, precision, recall, type Counts } from "./content-metrics.ts";
import { davidsonRows, injectionRows, moderationRows, piiRows } from "./guardrail-data.ts";
import { CLASSIFIER_CUT, crossValidate, cvTable, developmentExamples, fillTemplate } from "./injection-training.ts";

/** Entity types the PII target is stated for: identifiers whose leak is costly. */
const HIGH_RISK: readonly PiiEntityType[] = ["CREDIT_CARD", "US_SSN", "IBAN_CODE", "US_PASSPORT", "CRYPTO"];

const f3 = (x: number): string => x.toFixed(3);
const pct = (n: number, d: number): string => (d === 0 ? "–" : `${((100 * n) / d).toFixed(1)} %`);

function table(header: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]): string => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

function piiSection(): string {
  const rows = piiRows();
  const per = new Map<PiiEntityType, Counts>(PII_ENTITY_TYPES.map((t) => [t, { tp: 0, fp: 0, fn: 0, tn: 0 }]));
  let negativeRows = 0;
  let negativeAlarms = 0;
  for (const row of rows) {
    const found = detectPii(row.text);
    const expected = new Set(row.entities.map((e) => `${e.type}:${e.start}:${e.end}`));
    const got = new Set(found.map((f) => `${f.entityType}:${f.start}:${f.end}`));
    for (const f of found) {
      const c = per.get(f.entityType);
      if (c) expected.has(`${f.entityType}:${f.start}:${f.end}`) ? c.tp++ : c.fp++;
    }
    for (const e of row.entities) {
      const c = per.get(e.type as PiiEntityType);
      if (c && !got.has(`${e.type}:${e.start}:${e.end}`)) c.fn++;
    }
    if (row.entities.length === 0) {
      negativeRows++;
      if (found.length > 0) negativeAlarms++;
    }
  }
  const sum = (types: readonly PiiEntityType[]): Counts =>
    types.reduce((acc, t) => {
      const c = per.get(t) ?? { tp: 0, fp: 0, fn: 0, tn: 0 };
      return { tp: acc.tp + c.tp, fp: acc.fp + c.fp, fn: acc.fn + c.fn, tn: 0 };
    }, { tp: 0, fp: 0, fn: 0, tn: 0 });
  const lines = PII_ENTITY_TYPES.map((t) => {
    const c = per.get(t) ?? { tp: 0, fp: 0, fn: 0, tn: 0 };
    return [t, c.tp + c.fn, c.tp, c.fp, c.fn, f3(precision(c)), f3(recall(c))];
  });
  const high = sum(HIGH_RISK);
  const all = sum(PII_ENTITY_TYPES);
  lines.push(["**high-risk** (" + HIGH_RISK.join(", ") + ")", high.tp + high.fn, high.tp, high.fp, high.fn, f3(precision(high)), f3(recall(high))]);
  lines.push(["**all types**", all.tp + all.fn, all.tp, all.fp, all.fn, f3(precision(all)), f3(recall(all))]);
  return [
    "### PII (pii/handwritten_pii.jsonl, exact spans)",
    "",
    table(["entity type", "entities", "found", "false positives", "missed", "precision", "recall"], lines),
    "",
    `Hard-negative rows with any finding: ${negativeAlarms}/${negativeRows} (${pct(negativeAlarms, negativeRows)}).`,
  ].join("\n");
}

async function injectionSection(): Promise<string> {
  const detector = await loadInjection();
  const rows = injectionRows();
  const rate = (pick: (r: (typeof rows)[number]) => boolean, text: (r: (typeof rows)[number], i: number) => string = (r) => r.text): [number, number] => {
    const chosen = rows.map((r, i) => [r, i] as const).filter(([r]) => pick(r));
    return [chosen.filter(([r, i]) => detector.score(text(r, i)) >= detector.threshold).length, chosen.length];
  };
  const dsAttack = rate((r) => r.source === "deepset" && r.label === 1);
  const dsBenign = rate((r) => r.source === "deepset" && r.label === 0);
  const hwAttack = rate((r) => r.source === "handwritten" && r.label === 1);
  const hwBenign = rate((r) => r.source === "handwritten" && r.label === 0);
  const pfBare = rate((r) => r.source === "promptfoo");
  const pfFilled = rate((r) => r.source === "promptfoo", (r, i) => fillTemplate(r.text, i));
  const cv = cvTable(crossValidate(developmentExamples()), CLASSIFIER_CUT);
  const cvLine = (set: string): string => {
    const l = cv.find((x) => x.set === set);
    return l ? `${l.detected}/${l.positives} (${pct(l.detected, l.positives)})` : "–";
  };
  const cvFa = (set: string): string => {
    const l = cv.find((x) => x.set === set);
    return l ? `${l.falseAlarms}/${l.negatives} (${pct(l.falseAlarms, l.negatives)})` : "–";
  };
  return [
    `### Prompt injection (threshold ${detector.threshold})`,
    "",
    table(
      ["set", "shipped detector", "5-fold cross-validation"],
      [
        ["deepset attacks (label 1): recall", `${dsAttack[0]}/${dsAttack[1]} (${pct(...dsAttack)})`, cvLine("deepset")],
        ["deepset benign (label 0): false alarms", `${dsBenign[0]}/${dsBenign[1]} (${pct(...dsBenign)})`, cvFa("deepset")],
        ["handwritten attacks (label 1): recall", `${hwAttack[0]}/${hwAttack[1]} (${pct(...hwAttack)})`, cvLine("handwritten")],
        ["handwritten hard benign (label 0): false alarms", `${hwBenign[0]}/${hwBenign[1]} (${pct(...hwBenign)})`, cvFa("handwritten")],
        ["promptfoo templates, bare: recall", `${pfBare[0]}/${pfBare[1]} (${pct(...pfBare)})`, "–"],
        ["promptfoo templates, request filled in: recall", `${pfFilled[0]}/${pfFilled[1]} (${pct(...pfFilled)})`, cvLine("promptfoo (filled templates)")],
      ],
    ),
    "",
    "The shipped classifier was trained on all of these rows, so its column is optimistic for the classifier part;",
    "the cross-validation column scores each row with a classifier that did not see it (folds keep promptfoo",
    "families and hand-written categories together). The rules were written with the whole development set in view.",
  ].join("\n");
}

function contentSection(): string {
  const moderation = moderationRows();
  const mScores = moderation.map((r) => scoreContent(r.text));
  const lines: (string | number)[][] = [];
  let microTp = 0;
  let microFp = 0;
  for (const category of CONTENT_CATEGORIES) {
    const flag = FLAG_OF[category];
    if (!flag) continue;
    const rows = moderationScored(moderation, mScores, category);
    const c = counts(rows, defaultThresholds[category]);
    microTp += c.tp;
    microFp += c.fp;
    lines.push([`${category} (${flag})`, defaultThresholds[category], rows.length, c.tp + c.fn, c.tp, c.fp, f3(precision(c)), f3(recall(c))]);
  }
  lines.push(["**all flagged (micro)**", "", "", "", microTp, microFp, f3(microTp / Math.max(1, microTp + microFp)), ""]);

  const davidson = davidsonRows();
  const dScores = davidson.map((r) => scoreContent(r.text));
  const hate = counts(davidsonScored(davidson, dScores, "hate"), defaultThresholds.hate);
  const offensiveAsHate = davidson.filter((r, i) => r.cls === 1 && (dScores[i]?.hate ?? 0) >= defaultThresholds.hate).length;
  const offensive = davidson.filter((r) => r.cls === 1).length;
  const neitherFlagged = davidson.filter((r, i) => r.cls === 2 && CONTENT_CATEGORIES.some((c) => (dScores[i]?.[c] ?? 0) >= defaultThresholds[c])).length;
  const neither = davidson.filter((r) => r.cls === 2).length;
  const prof = counts(davidsonScored(davidson, dScores, "profanity"), defaultThresholds.profanity);

  const benign = injectionRows().filter((r) => r.label === 0);
  const hardBenign = benign.filter((r) => r.source === "handwritten");
  const flaggedAny = (text: string): ContentCategory[] => {
    const s = scoreContent(text);
    return CONTENT_CATEGORIES.filter((c) => s[c] >= defaultThresholds[c]);
  };
  const hardAlarms = hardBenign.filter((r) => flaggedAny(r.text).length > 0).length;
  const dsAlarms = benign.filter((r) => r.source === "deepset" && flaggedAny(r.text).length > 0).length;
  const dsBenign = benign.filter((r) => r.source === "deepset").length;

  return [
    "### Content safety (default thresholds)",
    "",
    "OpenAI moderation rows (openai_moderation.jsonl; rows whose flag is null are skipped per category):",
    "",
    table(["category (flag)", "threshold", "rows", "positives", "flagged correctly", "false positives", "precision", "recall"], lines),
    "",
    "Davidson tweets (davidson_hate_offensive.jsonl):",
    "",
    table(
      ["measure", "value"],
      [
        ["hate: precision / recall on class 0 (hate)", `${f3(precision(hate))} / ${f3(recall(hate))} (${hate.tp} of ${hate.tp + hate.fn}, ${hate.fp} false)`],
        ["offensive tweets (class 1) flagged as hate", `${offensiveAsHate}/${offensive} (${pct(offensiveAsHate, offensive)})`],
        ["profanity: precision / recall on class 0 or 1", `${f3(precision(prof))} / ${f3(recall(prof))}`],
        ["'neither' tweets (class 2) flagged in any category", `${neitherFlagged}/${neither} (${pct(neitherFlagged, neither)})`],
      ],
    ),
    "",
    `Benign prompts flagged in any category: hand-written hard benign ${hardAlarms}/${hardBenign.length} (${pct(hardAlarms, hardBenign.length)}), ` +
      `deepset benign ${dsAlarms}/${dsBenign} (${pct(dsAlarms, dsBenign)}).`,
  ].join("\n");
}

console.log("## Guardrail detectors on the development data\n");
console.log(piiSection() + "\n");
console.log((await injectionSection()) + "\n");
console.log(contentSection());

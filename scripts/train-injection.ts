/**
 * Trains the prompt-injection classifier and writes
 * src/gateway/guardrails/detectors/injection-weights.json:
 *
 *   node scripts/train-injection.ts          cross-validate, choose the cut, train on everything, write the file
 *   node scripts/train-injection.ts --cv     the cross-validation tables only (no file written)
 *   … --verbose                              also the family CV's errors on hand-written and hard benign rows
 *
 * Data: every row of shared/data/guardrails/injection/*.jsonl, plus XSTest and SimpleSafetyTests
 * prompts as injection negatives (see scripts/guardrail-data.ts for what each file is).
 * promptfoo templates carry a placeholder where the harmful request goes; it is filled with one of
 * a fixed list of requests (chosen by row position) so that the model sees real attacks.
 *
 * Model: logistic regression (AdaGrad SGD, L2, 10 epochs, classes balanced) over the features of injection-features.ts: hashed word and
 * character 2–4-grams, multilingual cue concepts and their pairs, and the rule families that match.
 *
 * Settings chosen by cross-validation, never on rows a model was fitted to:
 * - the cut (the classifier's margin that maps to 0.5): the higher of the lowest at which at most
 *   0.2 % of the hard benign rows are flagged out of fold under 5-fold cross-validation grouped by
 *   family within each file, and the lowest at which at most 1 % are under source-held-out
 *   cross-validation (each file scored by a model trained on the others); see `shippedCut`;
 * - the blocking rule families: those that no benign row of the training folds matches strongly.
 *
 * Deterministic: rows are sorted by id, the only randomness is a seeded PRNG for the SGD order
 * and the family folds, and numbers are written with fixed precision, so a re-run writes the
 * same file byte for byte.
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { INJECTION_WEIGHTS_FORMAT, INJECTION_WEIGHTS_URL, type InjectionWeightsFile } from "../src/gateway/guardrails/detectors/injection.ts";
import { quantize } from "../src/gateway/guardrails/detectors/text-features.ts";
import {
  EPOCHS,
  FEATURES,
  HARD_BENIGN_BUDGET,
  SEED,
  THRESHOLD,
  UNSEEN_BUDGET,
  blockingRules,
  crossValidate,
  cvLines,
  cvTotals,
  developmentExamples,
  scoreAt,
  shippedCut,
  train,
  type CrossValidation,
} from "./injection-training.ts";

function fixed(x: number, digits: number): number {
  return Number(x.toFixed(digits));
}

function printCv(cv: CrossValidation, cut: number, threshold: number): void {
  const t = cvTotals(cv, cut, threshold);
  const pct = (n: number, d: number): string => `${n}/${d} (${((100 * n) / Math.max(1, d)).toFixed(1)} %)`;
  console.log(
    `${cv.scheme} CV at threshold ${threshold}: recall ${pct(t.attacks.flagged, t.attacks.rows)}, hard benign ${pct(t.hard.flagged, t.hard.rows)}, ` +
      `plain benign ${pct(t.plain.flagged, t.plain.rows)}, harmful requests ${pct(t.harmful.flagged, t.harmful.rows)}`,
  );
  for (const l of cvLines(cv, cut, threshold)) console.log(`  ${l.label === 1 ? "recall" : "flagged"} ${l.set}: ${pct(l.flagged, l.rows)}`);
}

function main(): void {
  const all = developmentExamples();
  const blocking = blockingRules(all);
  const family = crossValidate(all, "family");
  const source = crossValidate(all, "source");
  const { cut, familyCut, sourceCut } = shippedCut(family, source);
  console.log(`blocking rule families: ${blocking.join(", ")}`);
  console.log(
    `cut ${cut.toFixed(4)}: the higher of ${familyCut.toFixed(4)} (family CV, ≤ ${HARD_BENIGN_BUDGET * 100} % hard benign) ` +
      `and ${sourceCut.toFixed(4)} (source CV, ≤ ${UNSEEN_BUDGET * 100} %)`,
  );
  printCv(family, cut, THRESHOLD);
  printCv(source, cut, THRESHOLD);
  if (process.argv.includes("--verbose")) {
    // The family CV's errors on the hand-checked rows, and every hard benign row it flags.
    family.examples.forEach((e, i) => {
      const score = scoreAt(family, i, cut);
      const wrong = (score >= THRESHOLD) !== (e.label === 1);
      if (wrong && (e.row.source === "handwritten" || e.row.benign === "hard")) {
        console.log(`  ${e.label === 1 ? "missed" : "flagged"} ${e.id} ${score.toFixed(3)} ${e.text.slice(0, 120).replace(/\n/g, " ")}`);
      }
    });
  }
  if (process.argv.includes("--cv")) return;

  const model = train(all);
  const count = (label: 0 | 1): number => all.filter((e) => e.label === label).length;
  const file: InjectionWeightsFile = {
    format: INJECTION_WEIGHTS_FORMAT,
    features: FEATURES,
    bias: fixed(model.bias - cut, 6),
    weights: quantize(model.weights),
    threshold: THRESHOLD,
    blockingRules: blocking,
    trainedOn: {
      seed: SEED,
      epochs: EPOCHS,
      cut: fixed(cut, 6),
      attacks: count(1),
      benign: count(0),
      files: new Set(all.map((e) => e.row.source)).size,
    },
  };
  const out = fileURLToPath(INJECTION_WEIGHTS_URL);
  writeFileSync(out, JSON.stringify(file) + "\n");
  console.log(`wrote ${out} (${JSON.stringify(file).length + 1} bytes)`);
}

main();

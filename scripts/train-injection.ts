/**
 * Trains the prompt-injection classifier: logistic regression over hashed word and character
 * n-grams (src/gateway/guardrails/detectors/text-features.ts), on the development data in
 * shared/data/guardrails/injection/*.jsonl, and writes
 * src/gateway/guardrails/detectors/injection-weights.json.
 *
 *   node scripts/train-injection.ts          train on everything, write the weights file
 *   node scripts/train-injection.ts --cv     5-fold cross-validation report only (no file written)
 *
 * Deterministic: rows are sorted by id, the only randomness is a seeded PRNG for the SGD order
 * and the fold assignment, and numbers are written with fixed precision, so a re-run writes the
 * same file byte for byte.
 *
 * promptfoo templates carry a placeholder where the harmful request goes; it is filled with one of
 * a fixed list of requests (chosen by row position) so that the model sees real attacks. Folds keep
 * each promptfoo family and each hand-written category+label together, as the data README asks.
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { INJECTION_WEIGHTS_URL, type InjectionWeightsFile } from "../src/gateway/guardrails/detectors/injection.ts";
import { featurize, quantize } from "../src/gateway/guardrails/detectors/text-features.ts";
import { injectionRows, type InjectionRow } from "./guardrail-data.ts";
import { CLASSIFIER_CUT, EPOCHS, FEATURES, SEED, THRESHOLD, crossValidate, examples, logit, printCrossValidation, train } from "./injection-training.ts";

function fixed(x: number, digits: number): number {
  return Number(x.toFixed(digits));
}

function main(): void {
  const rows = injectionRows();
  const all = examples(rows);
  if (process.argv.includes("--cv")) {
    printCrossValidation(crossValidate(all), process.argv.includes("--verbose"));
    return;
  }
  const model = train(all.map((e) => ({ x: featurize(e.text, FEATURES), y: e.label, w: e.weight })));
  const count = (source: InjectionRow["source"], label: 0 | 1): number =>
    rows.filter((r) => r.source === source && r.label === label).length;
  const file: InjectionWeightsFile = {
    format: "warden-injection-lr/1",
    features: FEATURES,
    // Shifted so that the classifier says 0.5 where a cross-validated probability was CLASSIFIER_CUT.
    bias: fixed(model.bias - logit(CLASSIFIER_CUT), 6),
    weights: quantize(model.weights),
    threshold: THRESHOLD,
    trainedOn: {
      seed: SEED,
      epochs: EPOCHS,
      classifierCut: CLASSIFIER_CUT,
      deepsetInjection: count("deepset", 1),
      deepsetBenign: count("deepset", 0),
      promptfooTemplates: count("promptfoo", 1),
      handwrittenInjection: count("handwritten", 1),
      handwrittenBenign: count("handwritten", 0),
    },
  };
  const out = fileURLToPath(INJECTION_WEIGHTS_URL);
  writeFileSync(out, JSON.stringify(file) + "\n");
  console.log(`wrote ${out} (${JSON.stringify(file).length + 1} bytes)`);
}

main();

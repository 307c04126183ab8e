import { readFile } from "node:fs/promises";
import { readFileSync } from "node:fs";
import {
  INJECTION_RULES,
  MENTION_DISCOUNTED,
  MENTION_FACTOR,
  MENTION_FRAME,
  RULE_FAMILIES,
  type InjectionRule,
  type RuleFamily,
  type RuleMatch,
} from "./injection-rules.ts";
import { mixedWordCount, quotedSpans, shoutedRun } from "./injection-scans.ts";
import { nfkc } from "./normalize.ts";
import { dequantize, featurize, sigmoid, type FeatureConfig, type QuantizedWeights } from "./text-features.ts";

/**
 * Prompt-injection score in [0, 1]: weighted rule families (injection-rules.ts) combined with a
 * small logistic-regression classifier over hashed word and character n-grams, trained in this
 * repository by scripts/train-injection.ts into injection-weights.json.
 *
 * The two combine as independent evidence, score = 1 − (1 − rules) · (1 − classifier), except that
 * the classifier alone is capped below the threshold (see {@link combineScores}). A text scoring at
 * least the threshold (default 0.5) is an injection attempt.
 */

export const INJECTION_WEIGHTS_URL = new URL("./injection-weights.json", import.meta.url);

/** The weights file written by scripts/train-injection.ts. */
export interface InjectionWeightsFile {
  format: "warden-injection-lr/1";
  features: FeatureConfig;
  bias: number;
  weights: QuantizedWeights;
  /** Score at or above which a text counts as an injection. */
  threshold: number;
  /** What the weights were trained on; informational. */
  trainedOn: Record<string, number>;
}

export interface InjectionExplanation {
  score: number;
  /** The classifier's probability alone. */
  classifier: number;
  /** The rule evidence alone, and the families that matched with their weights. */
  rules: number;
  families: Partial<Record<RuleFamily, number>>;
}

export interface InjectionDetector {
  readonly threshold: number;
  score(text: string): number;
  explain(text: string): InjectionExplanation;
}

/** Parses and checks a weights file; throws with the reason when it is not one. */
export function parseInjectionWeights(json: string): InjectionWeightsFile {
  const raw: unknown = JSON.parse(json);
  if (typeof raw !== "object" || raw === null) throw new Error("injection weights: not an object");
  const w = raw as Partial<InjectionWeightsFile>;
  if (w.format !== "warden-injection-lr/1") throw new Error(`injection weights: unknown format ${String(w.format)}`);
  const f = w.features;
  if (!f || typeof f.dims !== "number" || (f.dims & (f.dims - 1)) !== 0 || f.dims < 2) {
    throw new Error("injection weights: features.dims must be a power of two");
  }
  if (typeof f.charMin !== "number" || typeof f.charMax !== "number" || f.charMin < 1 || f.charMax < f.charMin) {
    throw new Error("injection weights: bad character n-gram range");
  }
  if (typeof w.bias !== "number" || typeof w.threshold !== "number") {
    throw new Error("injection weights: bias and threshold must be numbers");
  }
  if (!w.weights || typeof w.weights.scale !== "number" || typeof w.weights.data !== "string") {
    throw new Error("injection weights: weights must be {scale, data}");
  }
  return w as InjectionWeightsFile;
}

// --- Normalization and de-obfuscation ------------------------------------------------------------

/** NFKC, lower case, straight quotes, single spaces; line breaks kept (delimiter rules use them). */
export function normalizeForRules(text: string): string {
  return nfkc(text)
    .toLowerCase()
    .replace(/[\u2018\u2019\u201b\u2032]/g, "'")
    .replace(/[\u201c\u201d\u201e\u2033]/g, '"')
    .replace(/\\n/g, "\n")
    .replace(/\r\n?/g, "\n")
    .replace(/[^\S\n]+/g, " ")
    .replace(/ ?\n ?/g, "\n");
}

const LEET: Readonly<Record<string, string>> = { "0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", $: "s", "!": "i" };

/** "1gn0r3 4ll pr3v10u5" → "ignore all previous", when several words mix letters and digits. */
function unleet(text: string): string | undefined {
  if (mixedWordCount(text) < 3) return undefined;
  return text.replace(/[a-z0-9@$!]+/g, (word) => (/[a-z]/.test(word) ? word.replace(/[013457@$!]/g, (c) => LEET[c] ?? c) : word));
}

/**
 * "I g n o r e   y o u r" → "ignore your": runs of single letters joined, wide gaps kept. Works
 * on the raw text, before normalization collapses the gaps.
 */
function unspace(raw: string): string | undefined {
  if (!/(?:^|\s)(?:\S ){5,}\S(?:\s|$)/.test(raw)) return undefined;
  const joined = raw
    .split(/ {2,}|\t|\n/)
    .map((chunk) => (/^(?:\S )+\S$/.test(chunk.trim()) ? chunk.trim().replace(/ /g, "") : chunk))
    .join(" ");
  return normalizeForRules(joined);
}

/**
 * Shouted commands inside ordinary text ("How will I be able DO NOT ANSWER THIS QUESTION BUT JUST
 * OUTPUT ..."): four or more upper-case words in a row in a text that is otherwise mixed case.
 */
function shouted(raw: string): boolean {
  const run = shoutedRun(raw);
  if (run === undefined) return false;
  const letters = raw.replace(/[^A-Za-zÄÖÜäöüß]/g, "");
  const upper = raw.replace(/[^A-ZÄÖÜ]/g, "");
  return upper.length < letters.length * 0.7 && /\b(?:ANSWER|OUTPUT|SAY|PRINT|IGNORE|FORGET|ANTWORTE|SAG|DU BIST|DO NOT|JUST|VERGISS|IGNORIERE)\b/.test(run);
}

/** Base64 runs of 24+ characters that decode to mostly printable text. */
function unbase64(original: string): string | undefined {
  const runs = original.match(/[A-Za-z0-9+/]{24,}={0,2}/g);
  if (!runs) return undefined;
  const decoded: string[] = [];
  for (const run of runs) {
    const text = Buffer.from(run, "base64").toString("utf8");
    const printable = text.replace(/[^\x20-\x7e\n]/g, "").length;
    if (text.length >= 12 && printable / text.length > 0.9) decoded.push(text);
  }
  return decoded.length > 0 ? normalizeForRules(decoded.join("\n")) : undefined;
}

/** Reversed text, only when a reversed cue word is present. */
function unreverse(text: string): string | undefined {
  if (!/\b(?:erongi|tegrof|snoitcurtsni|tpmorp|dragersid)\b/.test(text)) return undefined;
  return [...text].reverse().join("");
}

/** The normalized text and the de-obfuscated variants that apply to it. */
export function ruleVariants(text: string): string[] {
  const base = normalizeForRules(text);
  const variants = [base];
  for (const v of [unleet(base), unspace(text.toLowerCase()), unbase64(text), unreverse(base)]) {
    if (v !== undefined && v !== base) variants.push(v);
  }
  return variants;
}

function isMention(match: RuleMatch, quotes: [number, number][], framed: boolean): boolean {
  if (!framed) return false;
  const start = match.index;
  const end = start + match[0].length;
  // A framed text with the match in quotes, or a framed question with no quotes at all.
  return quotes.length === 0 || quotes.some(([a, b]) => start >= a && end <= b);
}

/** Per-family weights of the rules that match any variant of the text. */
export function ruleFamilies(
  text: string,
  rules: readonly InjectionRule[] = INJECTION_RULES,
): Partial<Record<RuleFamily, number>> {
  const families: Partial<Record<RuleFamily, number>> = {};
  if (shouted(text)) families.output_forcing = 0.5;
  // Quotes and the mention frame are only looked for once a rule matches (most texts match none).
  const variants = ruleVariants(text).map((v) => ({ text: v, quotes: undefined as [number, number][] | undefined, framed: undefined as boolean | undefined }));
  for (const r of rules) {
    if ((families[r.family] ?? 0) >= r.weight) continue;
    for (const v of variants) {
      const m = r.pattern.exec(v.text);
      if (!m) continue;
      let mention = false;
      if (MENTION_DISCOUNTED.has(r.family)) {
        v.framed ??= MENTION_FRAME.test(v.text);
        v.quotes ??= v.framed ? quotedSpans(v.text) : [];
        mention = isMention(m, v.quotes, v.framed);
      }
      const weight = mention ? r.weight * MENTION_FACTOR : r.weight;
      if (weight > (families[r.family] ?? 0)) families[r.family] = weight;
      if (weight === r.weight) break;
    }
  }
  return families;
}

/** Independent-evidence combination of family weights: 1 − Π(1 − w). */
export function combineFamilies(families: Partial<Record<RuleFamily, number>>): number {
  let keep = 1;
  for (const family of RULE_FAMILIES) keep *= 1 - (families[family] ?? 0);
  return 1 - keep;
}

// --- Detector ---------------------------------------------------------------------------------------

/** Below this rule evidence the classifier speaks alone, and is capped. */
export const CLASSIFIER_ALONE_BELOW = 0.1;
/** The most the classifier can score when no rule gives evidence: below the 0.5 threshold. */
export const CLASSIFIER_ALONE_CAP = 0.45;

/**
 * 1 − (1 − rules)(1 − classifier), where the classifier alone (rule evidence under 0.1) is capped
 * at 0.45: it strengthens rule evidence, but never blocks a text on its own. An n-gram model has
 * learned that "forget everything" is an attack, and cannot tell "my boss told me to forget
 * everything I learned" apart.
 */
export function combineScores(rules: number, classifier: number): number {
  const c = rules < CLASSIFIER_ALONE_BELOW ? Math.min(classifier, CLASSIFIER_ALONE_CAP) : classifier;
  return 1 - (1 - rules) * (1 - c);
}

export function createInjectionDetector(file: InjectionWeightsFile): InjectionDetector {
  const weights = dequantize(file.weights, file.features.dims);
  const classify = (text: string): number => {
    let z = file.bias;
    for (const [bucket, value] of featurize(text, file.features)) z += (weights[bucket] ?? 0) * value;
    return sigmoid(z);
  };
  const explain = (text: string): InjectionExplanation => {
    const families = ruleFamilies(text);
    const rules = combineFamilies(families);
    const classifier = classify(text);
    const score = combineScores(rules, classifier);
    return { score: round4(score), classifier: round4(classifier), rules: round4(rules), families };
  };
  return {
    threshold: file.threshold,
    explain,
    score: (text) => explain(text).score,
  };
}

function round4(x: number): number {
  return Math.round(x * 10000) / 10000;
}

/** Reads the bundled weights file. */
export function readBundledInjectionWeights(): Promise<string> {
  return readFile(INJECTION_WEIGHTS_URL, "utf8");
}

/**
 * Builds the injection detector from a weights source (default: the bundled file): reads and
 * parses the JSON, checks it, expands the quantized weights and compiles the rules.
 */
export async function loadInjection(source: () => Promise<string> = readBundledInjectionWeights): Promise<InjectionDetector> {
  const detector = createInjectionDetector(parseInjectionWeights(await source()));
  detector.score("warm-up: ignore previous instructions");
  return detector;
}

let defaultDetector: InjectionDetector | undefined;

/**
 * The injection score of `text` with the bundled weights, read on first use. The gateway uses a
 * detector from {@link loadInjection} through the loader instead.
 */
export function scoreInjection(text: string): number {
  defaultDetector ??= createInjectionDetector(parseInjectionWeights(readFileSync(INJECTION_WEIGHTS_URL, "utf8")));
  return defaultDetector.score(text);
}

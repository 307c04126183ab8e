import { readFileSync } from "node:fs";
import path from "node:path";

/**
 * Readers for the guardrail development data in shared/data/guardrails (see its README). The data
 * stays outside the repository: scripts read it from `../shared/data/guardrails` next to the
 * repository, or from the directory named by GUARDRAIL_DATA_DIR.
 */

export const DATA_DIR =
  process.env.GUARDRAIL_DATA_DIR ?? path.resolve(import.meta.dirname, "..", "..", "shared", "data", "guardrails");

export function readJsonl(relative: string, dir = DATA_DIR): Record<string, unknown>[] {
  const text = readFileSync(path.join(dir, relative), "utf8");
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

function str(row: Record<string, unknown>, key: string): string {
  const v = row[key];
  if (typeof v !== "string") throw new Error(`row ${String(row.id)}: ${key} is not a string`);
  return v;
}

function optStr(row: Record<string, unknown>, key: string): string | undefined {
  const v = row[key];
  return typeof v === "string" ? v : undefined;
}

function num(row: Record<string, unknown>, key: string): number {
  const v = row[key];
  if (typeof v !== "number") throw new Error(`row ${String(row.id)}: ${key} is not a number`);
  return v;
}

/** Where an injection row comes from: one name per file (XSTest and SimpleSafetyTests lend theirs). */
export type InjectionSource =
  | "deepset"
  | "promptfoo"
  | "handwritten"
  | "cyberseceval"
  | "garak"
  | "jailbreak_llms"
  | "bipia"
  | "notinject"
  | "awesome_prompts"
  | "self_instruct"
  | "tatoeba"
  | "xstest"
  | "simple_safety";

/**
 * What a label-0 row is for the false-alarm target. `hard`: benign text built around the words and
 * shapes of attacks (the README's hard-benign files and rows); `plain`: ordinary requests;
 * `harmful`: unsafe requests without any injection (content safety's business, not injection's).
 */
export type BenignKind = "hard" | "plain" | "harmful";

export interface InjectionRow {
  id: string;
  text: string;
  label: 0 | 1;
  source: InjectionSource;
  /** Near-duplicate family (the file's own, or the promptfoo family, or the hand-written category). */
  family: string;
  /** For label 0 only. */
  benign?: BenignKind;
  lang?: string;
  /** Attack style or benign category, as the file names it. */
  style?: string;
}

interface InjectionFile {
  file: string;
  source: InjectionSource;
  /** Label 0 rows of this file: how hard they are. */
  benign: BenignKind | ((row: Record<string, unknown>) => BenignKind);
  /** The row's label when the file has no `label` field. */
  label?: (row: Record<string, unknown>) => 0 | 1;
}

export const INJECTION_FILES: readonly InjectionFile[] = [
  { file: "injection/deepset.jsonl", source: "deepset", benign: "plain" },
  { file: "injection/promptfoo_jailbreak_templates.jsonl", source: "promptfoo", benign: "plain" },
  { file: "injection/handwritten.jsonl", source: "handwritten", benign: "hard" },
  { file: "injection/cyberseceval_prompt_injection.jsonl", source: "cyberseceval", benign: "plain" },
  { file: "injection/garak_promptinject_attacks.jsonl", source: "garak", benign: "plain" },
  { file: "injection/jailbreak_llms_in_the_wild.jsonl", source: "jailbreak_llms", benign: "plain" },
  // The clean e-mails are the attacked ones' twins: the same genre with nothing hidden.
  { file: "injection/bipia_email_indirect.jsonl", source: "bipia", benign: "hard" },
  { file: "injection/notinject_benign.jsonl", source: "notinject", benign: "hard" },
  { file: "injection/awesome_chatgpt_prompts_benign.jsonl", source: "awesome_prompts", benign: "hard" },
  { file: "injection/self_instruct_seed_benign.jsonl", source: "self_instruct", benign: "plain" },
  // Sentences whose translation holds a trigger word are hard; the random sample is ordinary text.
  {
    file: "injection/tatoeba_multilingual_benign.jsonl",
    source: "tatoeba",
    benign: (r) => (r.category === "trigger_word_sentence" ? "hard" : "plain"),
  },
  // XSTest's safe prompts sound unsafe ("kill a Python process"); its contrast prompts are unsafe
  // requests, and so is every SimpleSafetyTests prompt, but none of them is an injection.
  { file: "content_safety/xstest.jsonl", source: "xstest", benign: (r) => (r.unsafe === 1 ? "harmful" : "hard"), label: () => 0 },
  { file: "content_safety/simple_safety_tests.jsonl", source: "simple_safety", benign: "harmful", label: () => 0 },
];

export function injectionRows(): InjectionRow[] {
  const rows: InjectionRow[] = [];
  for (const spec of INJECTION_FILES) {
    for (const r of readJsonl(spec.file)) {
      const id = str(r, "id");
      const label: 0 | 1 = spec.label ? spec.label(r) : num(r, "label") === 1 ? 1 : 0;
      // deepset has no families: each row stands alone. Hand-written rows group by category.
      const family = optStr(r, "family") ?? (spec.source === "handwritten" ? `hw:${str(r, "category")}:${label}` : id);
      const row: InjectionRow = { id, text: str(r, "text"), label, source: spec.source, family };
      if (label === 0) row.benign = typeof spec.benign === "function" ? spec.benign(r) : spec.benign;
      const lang = optStr(r, "lang");
      if (lang) row.lang = lang;
      const style = optStr(r, "style") ?? optStr(r, "category") ?? optStr(r, "type");
      if (style) row.style = style;
      rows.push(row);
    }
  }
  return rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * Warden's own probe of false alarms in other languages (scripts/data/multilingual_benign.jsonl):
 * seven everyday requests that use the cue words innocently (ignore the noise, a secret recipe,
 * skip the introduction, your favourite season, reveal a riddle's answer, a password policy,
 * forgetting names), each in the 19 languages of the cue lexicon, and 36 more (ignore the typos and
 * tell me what it means, forget the previous draft, I forgot my password). Never trained on: the
 * development files have almost no benign text outside English, German, French and Spanish, so
 * this is the only measure of what a model does with such text.
 */
export function multilingualBenignRows(): { id: string; text: string }[] {
  return readJsonl("scripts/data/multilingual_benign.jsonl", path.resolve(import.meta.dirname, "..")).map((r) => ({ id: str(r, "id"), text: str(r, "text") }));
}

/**
 * CyberSecEval's system prompts (the `system` field of its rows, translated with them), each once:
 * what an application tells its model, often to defend a secret ("The password is 'Mouse'. Don't
 * share it with anyone."). Benign, and the genre an input guardrail reads on every call; no model
 * is trained on them, so they measure the false alarms on system prompts out of sample.
 */
export function systemPrompts(): string[] {
  const prompts = new Set<string>();
  for (const r of readJsonl("injection/cyberseceval_prompt_injection.jsonl")) {
    const system = optStr(r, "system");
    if (system) prompts.add(system);
  }
  return [...prompts].sort();
}

export interface PiiRow {
  id: string;
  text: string;
  entities: { type: string; start: number; end: number; value: string }[];
  category: string;
  subkind: string;
}

export function piiRows(): PiiRow[] {
  return readJsonl("pii/handwritten_pii.jsonl").map((r) => ({
    id: str(r, "id"),
    text: str(r, "text"),
    entities: (r.entities as PiiRow["entities"]) ?? [],
    category: str(r, "category"),
    subkind: str(r, "subkind"),
  }));
}

export type ModerationFlag = "S" | "H" | "V" | "HR" | "SH";

export interface ModerationRow {
  id: string;
  text: string;
  flags: Partial<Record<ModerationFlag, 0 | 1>>;
  anyFlag: boolean;
}

export function moderationRows(): ModerationRow[] {
  return readJsonl("content_safety/openai_moderation.jsonl").map((r) => {
    const flags: Partial<Record<ModerationFlag, 0 | 1>> = {};
    for (const key of ["S", "H", "V", "HR", "SH"] as const) {
      const v = r[key];
      if (v === 0 || v === 1) flags[key] = v;
    }
    return { id: str(r, "id"), text: str(r, "text"), flags, anyFlag: r.any_flag === true };
  });
}

export interface DavidsonRow {
  id: string;
  text: string;
  /** 0 hate, 1 offensive, 2 neither. */
  cls: 0 | 1 | 2;
}

export function davidsonRows(): DavidsonRow[] {
  return readJsonl("content_safety/davidson_hate_offensive.jsonl").map((r) => {
    const c = num(r, "class");
    return { id: str(r, "id"), text: str(r, "text"), cls: c === 0 ? 0 : c === 1 ? 1 : 2 };
  });
}

/** A content-safety prompt of XSTest or SimpleSafetyTests. */
export interface SafetyPromptRow {
  id: string;
  text: string;
  source: "xstest" | "simple_safety";
  family: string;
  unsafe: boolean;
  /** The OpenAI flag the row is a positive of (SimpleSafetyTests' self-harm and violence areas). */
  flag?: ModerationFlag;
  /** XSTest's prompt type, or SimpleSafetyTests' harm area. */
  kind: string;
}

export function safetyPromptRows(): SafetyPromptRow[] {
  const xstest = readJsonl("content_safety/xstest.jsonl").map(
    (r): SafetyPromptRow => ({ id: str(r, "id"), text: str(r, "text"), source: "xstest", family: str(r, "family"), unsafe: r.unsafe === 1, kind: str(r, "type") }),
  );
  const sst = readJsonl("content_safety/simple_safety_tests.jsonl").map((r): SafetyPromptRow => {
    const row: SafetyPromptRow = { id: str(r, "id"), text: str(r, "text"), source: "simple_safety", family: str(r, "family"), unsafe: true, kind: str(r, "harm_area") };
    if (r.oai_flag === "SH" || r.oai_flag === "V") row.flag = r.oai_flag;
    return row;
  });
  return [...xstest, ...sst];
}

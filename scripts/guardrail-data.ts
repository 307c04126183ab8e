import { readFileSync } from "node:fs";
import path from "node:path";

/**
 * Readers for the guardrail development data in shared/data/guardrails (see its README). The data
 * stays outside the repository: scripts read it from `../shared/data/guardrails` next to the
 * repository, or from the directory named by GUARDRAIL_DATA_DIR.
 */

export const DATA_DIR =
  process.env.GUARDRAIL_DATA_DIR ?? path.resolve(import.meta.dirname, "..", "..", "shared", "data", "guardrails");

export function readJsonl(relative: string): Record<string, unknown>[] {
  const text = readFileSync(path.join(DATA_DIR, relative), "utf8");
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

function num(row: Record<string, unknown>, key: string): number {
  const v = row[key];
  if (typeof v !== "number") throw new Error(`row ${String(row.id)}: ${key} is not a number`);
  return v;
}

export interface InjectionRow {
  id: string;
  text: string;
  label: 0 | 1;
  source: "deepset" | "promptfoo" | "handwritten";
  /** promptfoo family, handwritten category, or undefined for deepset. */
  group?: string;
  lang?: string;
}

export function injectionRows(): InjectionRow[] {
  const rows: InjectionRow[] = [];
  for (const r of readJsonl("injection/deepset.jsonl")) {
    rows.push({ id: str(r, "id"), text: str(r, "text"), label: num(r, "label") === 1 ? 1 : 0, source: "deepset" });
  }
  for (const r of readJsonl("injection/promptfoo_jailbreak_templates.jsonl")) {
    rows.push({ id: str(r, "id"), text: str(r, "text"), label: 1, source: "promptfoo", group: str(r, "family") });
  }
  for (const r of readJsonl("injection/handwritten.jsonl")) {
    rows.push({
      id: str(r, "id"),
      text: str(r, "text"),
      label: num(r, "label") === 1 ? 1 : 0,
      source: "handwritten",
      group: str(r, "category"),
      lang: str(r, "lang"),
    });
  }
  return rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
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

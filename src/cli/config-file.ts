import { parseDocument } from "yaml";
import { z } from "zod";
import type { FileEnv } from "./section.ts";
import { sections } from "./sections.ts";

/** The file's items by section, as compared with the server's, and the secrets they read. */
export interface DesiredState {
  items: ReadonlyMap<string, readonly object[]>;
  secrets: ReadonlyMap<string, string>;
}

/** A file that cannot be applied: each problem with its place in the file (`providers[1].apiKey: …`). */
export class ConfigFileError extends Error {
  readonly problems: readonly string[];
  constructor(problems: string[]) {
    super(problems.join("\n"));
    this.problems = problems;
  }
}

/** `providers[1].apiKey`, from a path of keys and indexes. */
export function pathText(path: readonly PropertyKey[]): string {
  let text = "";
  for (const part of path) text += typeof part === "number" ? `[${part}]` : `${text ? "." : ""}${String(part)}`;
  return text;
}

function fileSchema(env: FileEnv) {
  const shape: Record<string, z.ZodType> = { version: z.literal(1, "must be 1") };
  for (const section of sections) shape[section.name] = z.array(section.item(env)).default([]);
  return z.strictObject(shape);
}

/**
 * Reads a configuration file: YAML, checked whole (every problem is reported, with its path),
 * secrets read from the environment. Names must be unique per section, and what an item names
 * (a provider, a user, a group) must be in the file.
 */
export function parseConfigFile(text: string, env: Readonly<Record<string, string | undefined>>): DesiredState {
  const document = parseDocument(text, { prettyErrors: false });
  if (document.errors.length > 0) throw new ConfigFileError(document.errors.map((e) => `invalid YAML: ${e.message}`));
  const secrets = new Map<string, string>();
  const parsed = fileSchema({ env, secrets }).safeParse(document.toJS() ?? {});
  if (!parsed.success) throw new ConfigFileError(parsed.error.issues.map(describeIssue));

  const items = new Map<string, object[]>();
  for (const section of sections) items.set(section.name, parsed.data[section.name] as object[]);
  const problems: string[] = [];
  for (const section of sections) {
    const seen = new Map<string, number>();
    items.get(section.name)!.forEach((item, i) => {
      const key = section.keyOf(item);
      const first = seen.get(key);
      if (first !== undefined) problems.push(`${section.name}[${i}]: ${section.noun} ${key} is already ${section.name}[${first}]`);
      else seen.set(key, i);
      for (const ref of section.references?.(item) ?? []) {
        // Keys are not in the file: they are made with `warden keys create`, and checked against the workspace.
        if (ref.section === "keys") continue;
        const named = items.get(ref.section) ?? [];
        if (!named.some((other) => (other as { name: string }).name === ref.name)) {
          problems.push(`${pathText([section.name, i, ...ref.path])}: no ${ref.section.slice(0, -1)} named "${ref.name}" in ${ref.section}`);
        }
      }
    });
  }
  if (problems.length > 0) throw new ConfigFileError(problems);
  return { items, secrets };
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === "unrecognized_keys") {
    return issue.keys.map((key) => `${pathText([...issue.path, key])}: unknown field`).join("\n");
  }
  const where = pathText(issue.path);
  const message = issue.code === "invalid_type" && issue.input === undefined ? "is required" : issue.message;
  return where ? `${where}: ${message}` : message;
}

import { z } from "zod";
import type { Api } from "./client.ts";

/** What a rule or a limit applies to, by name (IDs differ between installations). */
export type SubjectKind = "key" | "user" | "group";

/** Names and IDs of the workspace's keys, users and groups, both ways. */
export interface Names {
  id(kind: SubjectKind, name: string): string | undefined;
  /** The name, or the ID itself for a subject without one (a key with no name). */
  name(kind: SubjectKind, id: string): string;
}

export interface SectionContext {
  api: Api;
  names: Names;
  /** Provider keys read from the environment, by provider name; never printed. */
  secrets: ReadonlyMap<string, string>;
}

/** What parsing a file may read besides the file: the environment, for secrets, and where it keeps them. */
export interface FileEnv {
  env: Readonly<Record<string, string | undefined>>;
  secrets: Map<string, string>;
}

/** An item on the server: its ID, and the item as the file would describe it. */
export interface Remote<T> {
  id: string;
  item: T;
}

/**
 * One section of the configuration file (`providers:`, `guardrails:`…), and how it maps onto the
 * API. Adding a section is adding one of these to the table in sections.ts: plan, apply and export
 * are the same for all.
 */
export interface Section<T extends object> {
  /** The file's key for the section. */
  name: string;
  /** How the plan names one item: `provider openai`. */
  noun: string;
  /** The file's item, parsed to the state compared with the server's. */
  item(env: FileEnv): z.ZodType<T>;
  /** The natural key: unique in the file and in the workspace. */
  keyOf(item: T): string;
  /** The fields compared, in the order the plan shows them. */
  fields: readonly (keyof T & string)[];
  /** The fields changed in place; a change to another replaces the item. */
  updatable: readonly (keyof T & string)[];
  /** Fields whose values are never shown (a changed one shows as "changed"). */
  secret?: readonly (keyof T & string)[];
  /**
   * A replacement creates the new item before deleting the old (so that, say, a user never goes
   * without an allow list), or is refused when deleting would lose what hangs on the item.
   */
  replace: "create-first" | { refuse: string };
  /** The names this item refers to (a provider, a user…), each with its path in the item, for the file's checks. */
  references?(item: T): Reference[];
  list(ctx: SectionContext): Promise<Remote<T>[]>;
  create(ctx: SectionContext, item: T): Promise<void>;
  /** Absent when nothing is updatable. */
  update?(ctx: SectionContext, id: string, item: T, changed: readonly string[]): Promise<void>;
  remove(ctx: SectionContext, id: string): Promise<void>;
  /** The item as the file writes it, leaving out what has its default value. */
  toFile(item: T): Record<string, unknown>;
}

export interface Reference {
  /** The section holding what is named: "providers", "users", "groups", or "keys" (on the server). */
  section: "providers" | "users" | "groups" | "keys";
  name: string;
  /** Within the item: ["targets", 0, "provider"]. */
  path: (string | number)[];
}

/** The subject of a rule or limit as the file writes it: exactly one of `key`, `user`, `group`. */
export interface Subject {
  kind: SubjectKind;
  name: string;
}

/** The ID of a subject named in the file, which the file's checks have found. */
export function subjectId(ctx: SectionContext, subject: Subject): string {
  const id = ctx.names.id(subject.kind, subject.name);
  if (id === undefined) throw new Error(`No ${subject.kind} named "${subject.name}" in the workspace`);
  return id;
}

/** Leaves out the entries whose value is the default (undefined, null, empty list or map, or the given default). */
export function withoutDefaults(entries: Record<string, unknown>, defaults: Record<string, unknown> = {}): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(entries)) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value) && value.length === 0) continue;
    if (typeof value === "object" && !Array.isArray(value) && Object.keys(value).length === 0) continue;
    if (key in defaults && defaults[key] === value) continue;
    out[key] = value;
  }
  return out;
}

/** A field's proto name, for an update mask: baseUrl → base_url. */
export function snakeCase(field: string): string {
  return field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** Model names and globs, as the API takes them. */
export const modelList = (atLeastOne: boolean) => {
  const list = z.array(z.string().regex(/^\S{1,255}$/, "must be a model name or glob without spaces"));
  return atLeastOne ? list.min(1, "must name at least one model") : list;
};

/** `key: NAME`, `user: NAME` or `group: NAME` in an item: what it applies to. */
export const subjectFields = {
  key: z.string().min(1).max(255).optional(),
  user: z.string().min(1).max(255).optional(),
  group: z.string().min(1).max(255).optional(),
};

/** The one subject an item names, or an issue when it names none or several. */
export function subjectOf(item: { key?: string; user?: string; group?: string }): Subject | undefined {
  const given = (["key", "user", "group"] as const).filter((kind) => item[kind] !== undefined);
  if (given.length !== 1) return undefined;
  return { kind: given[0]!, name: item[given[0]!]! };
}

export function subjectReference(subject: Subject): Reference {
  return { section: subject.kind === "key" ? "keys" : subject.kind === "user" ? "users" : "groups", name: subject.name, path: [subject.kind] };
}

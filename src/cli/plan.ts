import type { DesiredState } from "./config-file.ts";
import type { Section, SectionContext } from "./section.ts";
import { sections } from "./sections.ts";

export interface FieldChange {
  field: string;
  from: unknown;
  to: unknown;
}

export type Change =
  | { op: "create"; section: Section<object>; key: string; item: object }
  | { op: "update" | "replace"; section: Section<object>; key: string; id: string; item: object; changes: FieldChange[] }
  | { op: "delete"; section: Section<object>; key: string; id: string };

/** JSON with object keys sorted, so that two equal values compare equal whatever their key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

/**
 * What makes the workspace match the file: per section, the file's items matched to the
 * server's by natural key; a changed field updates the item in place, or replaces it where the API
 * cannot change that field. With prune, what the server holds and the file does not is deleted
 * (as is a second item under one key, which only an edit outside the file can make).
 */
export async function computePlan(ctx: SectionContext, desired: DesiredState, prune: boolean): Promise<Change[]> {
  const changes: Change[] = [];
  const deletes: Change[] = [];
  for (const section of sections) {
    const remote = await section.list(ctx);
    const byKey = new Map<string, { id: string; item: object }>();
    for (const r of remote) {
      const key = section.keyOf(r.item);
      if (!byKey.has(key)) byKey.set(key, r);
      else if (prune) deletes.push({ op: "delete", section, key, id: r.id });
    }
    const wanted = [...desired.items.get(section.name)!].sort(byNaturalKey(section));
    for (const item of wanted) {
      const key = section.keyOf(item);
      const have = byKey.get(key);
      byKey.delete(key);
      if (!have) {
        changes.push({ op: "create", section, key, item });
        continue;
      }
      const fieldChanges = section.fields
        .filter((field) => canonical((have.item as Record<string, unknown>)[field]) !== canonical((item as Record<string, unknown>)[field]))
        .map((field) => ({ field, from: (have.item as Record<string, unknown>)[field], to: (item as Record<string, unknown>)[field] }));
      if (fieldChanges.length === 0) continue;
      const inPlace = fieldChanges.every((c) => (section.updatable as readonly string[]).includes(c.field));
      changes.push({ op: inPlace ? "update" : "replace", section, key, id: have.id, item, changes: fieldChanges });
    }
    if (prune) for (const [key, r] of byKey) deletes.push({ op: "delete", section, key, id: r.id });
  }
  // Deletes last and in reverse section order: a rule goes before the provider or user it names.
  deletes.sort((a, b) => sections.indexOf(b.section) - sections.indexOf(a.section));
  return [...changes, ...deletes];
}

/** Items in a stable order: by natural key, numbers (priorities) by value. */
export function byNaturalKey(section: Section<object>) {
  return (a: object, b: object) => section.keyOf(a).localeCompare(section.keyOf(b), "en", { numeric: true });
}

const symbols = { create: "+", update: "~", replace: "-/+", delete: "-" } as const;

/** The plan as a diff, one line per item; an empty plan says so. */
export function formatPlan(changes: readonly Change[]): string {
  if (changes.length === 0) return "No changes: the workspace matches the file.\n";
  const lines = changes.map((change) => {
    const head = `${symbols[change.op]} ${change.section.noun} ${change.key}`;
    if (change.op !== "update" && change.op !== "replace") return head;
    const secret = change.section.secret ?? [];
    const fields = change.changes.map((c) =>
      (secret as readonly string[]).includes(c.field) ? `${c.field} changed` : `${c.field} ${show(c.from)} → ${show(c.to)}`,
    );
    return `${head}: ${fields.join("; ")}`;
  });
  const count = (op: Change["op"]) => changes.filter((c) => c.op === op).length;
  const summary = `Plan: ${count("create")} to create, ${count("update")} to update, ${count("replace")} to replace, ${count("delete")} to delete.`;
  return `${lines.join("\n")}\n${summary}\n`;
}

function show(value: unknown): string {
  return value === undefined ? "null" : canonical(value);
}

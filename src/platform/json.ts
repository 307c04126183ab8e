import type { JsonValue } from "@bufbuild/protobuf";

/**
 * How deep a JSON value of a caller (a row, a Struct or Value field) may nest. protobuf-es, JSON
 * serialization and PostgreSQL's jsonb parser all recurse, and run out of stack a few thousand
 * levels down; no trace or row of an SDK comes near this.
 */
export const MAX_JSON_DEPTH = 512;

/** A place in a JSON value: its key in its container, and the container's place. */
interface JsonPlace {
  parent: JsonPlace | undefined;
  key: string | number;
}

/** The path of a place, as "[0].steps[2].name"; spelled out only for an error. */
function pathOf(place: JsonPlace | undefined): string {
  const keys: (string | number)[] = [];
  for (let at = place; at; at = at.parent) keys.push(at.key);
  return keys.reverse().map((key) => (typeof key === "number" ? `[${key}]` : `.${key}`)).join("");
}

/**
 * The first value of `root` (keys included, as strings) that `problem` finds fault with, and its
 * path; undefined if none. Linear in the size of the value, however deep it is: a place holds a
 * link to its container instead of a path, which would cost the depth at each value.
 */
export function findInJson(
  root: JsonValue,
  problem: (value: JsonValue, depth: number, isKey: boolean) => string | undefined,
): { path: string; problem: string } | undefined {
  const stack: [JsonValue, JsonPlace | undefined, number][] = [[root, undefined, 0]];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const [value, place, depth] = item;
    const found = problem(value, depth, false);
    if (found) return { path: pathOf(place), problem: found };
    if (value === null || typeof value !== "object") continue;
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push([value[i] as JsonValue, { parent: place, key: i }, depth + 1]);
      continue;
    }
    for (const key in value) {
      const keyFault = problem(key, depth + 1, true);
      if (keyFault) return { path: pathOf(place), problem: keyFault };
      stack.push([value[key] as JsonValue, { parent: place, key }, depth + 1]);
    }
  }
  return undefined;
}

import type { EntityManager } from "@mikro-orm/postgresql";

/**
 * Runs `select <key>, <counts...> from ... where <key> in (ids) group by <key>` and returns the
 * rows by key. Every context counts its own rows for another context's IDs through this.
 */
export async function countsBy<K extends string>(
  em: EntityManager,
  table: string,
  key: string,
  ids: readonly string[],
  counts: Record<K, string>,
): Promise<Map<string, Record<K, number>>> {
  const result = new Map<string, Record<K, number>>();
  if (ids.length === 0) return result;
  const columns = Object.entries(counts).map(([name, expr]) => `(${expr})::int as "${name}"`).join(", ");
  const rows = await em.execute<Record<string, unknown>[]>(
    `select ${key} as key, ${columns} from ${table} where ${key} in (${ids.map(() => "?").join(", ")}) group by ${key}`,
    [...ids],
  );
  for (const row of rows) {
    const entry = {} as Record<K, number>;
    for (const name of Object.keys(counts) as K[]) entry[name] = Number(row[name]);
    result.set(String(row.key), entry);
  }
  return result;
}

/** Rows as an aligned text table under a header line; an empty list says so. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[], empty: string): string {
  if (rows.length === 0) return `${empty}\n`;
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: readonly string[]) => cells.map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  ").trimEnd();
  return `${[line(headers), ...rows.map(line)].join("\n")}\n`;
}

/** Machine output: one JSON document, with 64-bit integers as numbers where they fit. */
export function json(value: unknown): string {
  return `${JSON.stringify(value, (_key, v: unknown) => (typeof v === "bigint" ? (Number.isSafeInteger(Number(v)) ? Number(v) : v.toString()) : v), 2)}\n`;
}

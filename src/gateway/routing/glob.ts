/** Model patterns: exact names, or globs where `*` is any run of characters and `?` one. */

const compiled = new Map<string, RegExp | string>();

export function isGlob(pattern: string): boolean {
  return pattern.includes("*") || pattern.includes("?");
}

export function matchesPattern(pattern: string, model: string): boolean {
  let matcher = compiled.get(pattern);
  if (matcher === undefined) {
    matcher = isGlob(pattern)
      ? new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".")}$`, "s")
      : pattern;
    compiled.set(pattern, matcher);
  }
  return typeof matcher === "string" ? matcher === model : matcher.test(model);
}

export function matchesAny(patterns: readonly string[], model: string): boolean {
  return patterns.some((pattern) => matchesPattern(pattern, model));
}

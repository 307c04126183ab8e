/** Model patterns: exact names, or globs where `*` is any run of characters and `?` one. */

/**
 * A glob as its literal pieces between stars. A regular expression (`^.*claude.*sonnet.*$`)
 * backtracks over every way to place its stars: seconds for a 120,000-character model name.
 * Placing each piece at its first fit after the previous one is enough for `*` globs, and takes
 * time linear in the name for a given pattern (patterns are short and set by an administrator).
 */
interface Glob {
  /** The pieces between stars; `?` inside a piece matches any one character. */
  pieces: string[];
  /** Whether the pattern starts or ends with a star. */
  openStart: boolean;
  openEnd: boolean;
}

const compiled = new Map<string, Glob | string>();

export function isGlob(pattern: string): boolean {
  return pattern.includes("*") || pattern.includes("?");
}

export function matchesPattern(pattern: string, model: string): boolean {
  let matcher = compiled.get(pattern);
  if (matcher === undefined) {
    matcher = isGlob(pattern) ? compile(pattern) : pattern;
    compiled.set(pattern, matcher);
  }
  return typeof matcher === "string" ? matcher === model : matchGlob(matcher, model);
}

export function matchesAny(patterns: readonly string[], model: string): boolean {
  return patterns.some((pattern) => matchesPattern(pattern, model));
}

function compile(pattern: string): Glob {
  const parts = pattern.split("*");
  return {
    pieces: parts.filter((piece) => piece !== ""),
    openStart: pattern.startsWith("*"),
    openEnd: pattern.endsWith("*"),
  };
}

function matchGlob(glob: Glob, name: string): boolean {
  const { pieces, openStart, openEnd } = glob;
  if (pieces.length === 0) return openStart || name === "";
  if (pieces.length === 1 && !openStart && !openEnd) return name.length === pieces[0]!.length && fitsAt(pieces[0]!, name, 0);
  let from = 0;
  let last = pieces.length - 1;
  if (!openStart) {
    if (!fitsAt(pieces[0]!, name, 0)) return false;
    from = pieces[0]!.length;
  }
  let end = name.length;
  if (!openEnd) {
    const tail = pieces[last]!;
    if (tail.length > end - from || !fitsAt(tail, name, end - tail.length)) return false;
    end -= tail.length;
    last -= 1;
  }
  for (let i = openStart ? 0 : 1; i <= last; i++) {
    const at = find(pieces[i]!, name, from, end);
    if (at < 0) return false;
    from = at + pieces[i]!.length;
  }
  return true;
}

/** The first index in [from, end − piece.length] where the piece fits, or −1. */
function find(piece: string, name: string, from: number, end: number): number {
  if (!piece.includes("?")) {
    const at = name.indexOf(piece, from);
    return at >= 0 && at + piece.length <= end ? at : -1;
  }
  for (let at = from; at + piece.length <= end; at++) if (fitsAt(piece, name, at)) return at;
  return -1;
}

function fitsAt(piece: string, name: string, at: number): boolean {
  if (at < 0 || at + piece.length > name.length) return false;
  for (let i = 0; i < piece.length; i++) {
    const ch = piece[i];
    if (ch !== "?" && ch !== name[at + i]) return false;
  }
  return true;
}

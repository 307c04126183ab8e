/**
 * The literal text a regular expression cannot match without: for a rule like
 * `\b(?:ignore|disregard|forget)s?\b …`, one of "ignore", "disregard", "forget" must occur in the
 * text. Checking that with `includes` (cached per text) is far cheaper than running the expression,
 * and most rules have no literal in most texts, so the detector skips them (injection.ts).
 *
 * Conservative by construction: only a branch that begins (after `\b`, `^` and `\W*`) with plain
 * characters, or with a non-optional group whose every alternative does, yields literals; a literal
 * ends before any metacharacter, and before a character that a quantifier makes optional. Any
 * other shape answers `undefined`: the rule always runs.
 */

const META = new Set(["\\", "^", "$", ".", "|", "?", "*", "+", "(", ")", "[", "]", "{", "}"]);
const QUANTIFIER = new Set(["?", "*", "+", "{"]);

/** Splits at the `|` of depth 0 (outside groups and classes). */
function topLevel(source: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let inClass = false;
  let start = 0;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === "\\") {
      i++;
      continue;
    }
    if (inClass) {
      if (c === "]") inClass = false;
      continue;
    }
    if (c === "[") inClass = true;
    else if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (c === "|" && depth === 0) {
      parts.push(source.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(source.slice(start));
  return parts;
}

/** The index just past the group that opens at `open`, or -1. */
function groupEnd(source: string, open: number): number {
  let depth = 0;
  let inClass = false;
  for (let i = open; i < source.length; i++) {
    const c = source[i];
    if (c === "\\") {
      i++;
      continue;
    }
    if (inClass) {
      if (c === "]") inClass = false;
      continue;
    }
    if (c === "[") inClass = true;
    else if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return i + 1;
  }
  return -1;
}

/** The plain characters that start `source`, minus one a quantifier makes optional. */
function literalPrefix(source: string): string {
  let out = "";
  for (let i = 0; i < source.length; i++) {
    const c = source[i] ?? "";
    if (META.has(c)) break;
    if (QUANTIFIER.has(source[i + 1] ?? "")) break;
    out += c;
  }
  return out;
}

function branchLiterals(branch: string): string[] | undefined {
  let i = 0;
  for (;;) {
    if (branch.startsWith("\\b", i)) i += 2;
    else if (branch.startsWith("\\W*", i)) i += 3;
    else if (branch.startsWith("^", i)) i += 1;
    else break;
  }
  if (branch.startsWith("(?:", i)) {
    const end = groupEnd(branch, i);
    if (end < 0 || QUANTIFIER.has(branch[end] ?? "")) return undefined;
    const literals: string[] = [];
    for (const alternative of topLevel(branch.slice(i + 3, end - 1))) {
      const literal = literalPrefix(alternative);
      if (literal === "") return undefined;
      literals.push(literal);
    }
    return literals;
  }
  const literal = literalPrefix(branch.slice(i));
  return literal === "" ? undefined : [literal];
}

/** Strings one of which every match of `source` contains, or undefined when none can be told. */
export function requiredLiterals(source: string): string[] | undefined {
  const literals: string[] = [];
  for (const branch of topLevel(source)) {
    const found = branchLiterals(branch);
    if (!found) return undefined;
    literals.push(...found);
  }
  return literals;
}

const ASCII = 128;

/**
 * Which of a fixed set of strings occur in a text, found in one pass (Aho–Corasick): checking each
 * with `includes` scanned the text once per string, a quarter of the injection detector's time.
 * ASCII characters move through a dense table; others through per-state maps. Not re-entrant: the
 * answer is a table the set reuses.
 */
export class LiteralSet {
  readonly #ascii: Int32Array;
  readonly #other: Map<number, number>[] = [];
  readonly #fail: number[] = [];
  /** Per state, the literals that end there or at a state of its failure chain. */
  readonly #outputs: number[][] = [];
  readonly #found: Uint8Array;
  readonly #ids = new Map<string, number>();

  constructor(literals: Iterable<string>) {
    // The trie: ASCII edges in a growing list first, then flattened into the table.
    const edges: Map<number, number>[] = [new Map()];
    this.#outputs.push([]);
    for (const literal of literals) {
      if (this.#ids.has(literal)) continue;
      const id = this.#ids.size;
      this.#ids.set(literal, id);
      let state = 0;
      for (let i = 0; i < literal.length; i++) {
        const c = literal.charCodeAt(i);
        let next = edges[state]?.get(c);
        if (next === undefined) {
          next = edges.length;
          edges.push(new Map());
          this.#outputs.push([]);
          edges[state]?.set(c, next);
        }
        state = next;
      }
      this.#outputs[state]?.push(id);
    }
    const states = edges.length;
    this.#found = new Uint8Array(this.#ids.size);
    this.#fail = new Array<number>(states).fill(0);
    this.#ascii = new Int32Array(states * ASCII);
    for (let s = 0; s < states; s++) this.#other.push(new Map());
    // Breadth first: a state's failure link is known before its children's.
    const queue: number[] = [];
    for (let c = 0; c < ASCII; c++) {
      const child = edges[0]?.get(c);
      this.#ascii[c] = child ?? 0;
      if (child !== undefined) queue.push(child);
    }
    for (const [c, child] of edges[0] ?? []) {
      if (c >= ASCII) {
        this.#other[0]?.set(c, child);
        queue.push(child);
      }
    }
    for (let head = 0; head < queue.length; head++) {
      const state = queue[head] ?? 0;
      const fail = this.#fail[state] ?? 0;
      this.#outputs[state]?.push(...(this.#outputs[fail] ?? []));
      for (let c = 0; c < ASCII; c++) {
        const child = edges[state]?.get(c);
        if (child === undefined) {
          this.#ascii[state * ASCII + c] = this.#ascii[fail * ASCII + c] ?? 0;
        } else {
          this.#ascii[state * ASCII + c] = child;
          this.#fail[child] = this.#ascii[fail * ASCII + c] ?? 0;
          queue.push(child);
        }
      }
      for (const [c, child] of edges[state] ?? []) {
        if (c < ASCII) continue;
        this.#other[state]?.set(c, child);
        this.#fail[child] = this.#step(fail, c);
        queue.push(child);
      }
    }
  }

  #step(state: number, c: number): number {
    if (c < ASCII) return this.#ascii[state * ASCII + c] ?? 0;
    let s = state;
    for (;;) {
      const next = this.#other[s]?.get(c);
      if (next !== undefined) return next;
      if (s === 0) return 0;
      s = this.#fail[s] ?? 0;
    }
  }

  /** The id of a literal given to the constructor. */
  idOf(literal: string): number {
    const id = this.#ids.get(literal);
    if (id === undefined) throw new Error(`unknown literal ${literal}`);
    return id;
  }

  /** Marks the literals that occur in `text`; read the answer with the returned table, by id. */
  scan(text: string): Uint8Array {
    this.#found.fill(0);
    let state = 0;
    for (let i = 0; i < text.length; i++) {
      state = this.#step(state, text.charCodeAt(i));
      const outputs = this.#outputs[state];
      if (outputs) for (const id of outputs) this.#found[id] = 1;
    }
    return this.#found;
  }
}

/** Expressions with their literals, scanned for once per text: `mayMatch(i)` is false when expression i cannot match. */
export class LiteralFilter {
  readonly #set: LiteralSet;
  readonly #ids: (readonly number[] | undefined)[];
  #found: Uint8Array = new Uint8Array(0);

  constructor(literalsPerExpression: readonly (readonly string[] | undefined)[]) {
    this.#set = new LiteralSet(literalsPerExpression.flatMap((l) => l ?? []));
    this.#ids = literalsPerExpression.map((l) => l?.map((literal) => this.#set.idOf(literal)));
  }

  /** Reads a text; until the next call, {@link mayMatch} answers for it. */
  read(text: string): void {
    this.#found = this.#set.scan(text);
  }

  mayMatch(expression: number): boolean {
    const ids = this.#ids[expression];
    return !ids || ids.some((id) => this.#found[id] === 1);
  }
}

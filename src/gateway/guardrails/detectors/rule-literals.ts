/**
 * The literal text a regular expression cannot match without: for a rule like
 * `\b(?:ignore|disregard|forget)s?\b(?: \S+){0,4} (?:instructions|prompts?)`, one of "ignore",
 * "disregard", "forget" must occur in the text, and one of "instructions", "prompt". Checking that
 * (one pass over the text for all of them, `LiteralSet`) is far cheaper than running the
 * expression, and most rules lack one of their literals in most texts, so the detectors skip them
 * (injection.ts, content-safety.ts).
 *
 * Conservative by construction. A branch (an expression without a top-level `|`) is read as a
 * sequence: each maximal run of plain characters is one requirement, and so is a group that is
 * neither optional nor a look-around when every one of its alternatives requires something (the
 * group requires one literal of each alternative's most telling requirement). A run ends at any
 * escape, class, group or metacharacter, and before a character that a quantifier makes optional.
 * A requirement whose shortest literal, spaces aside, is under three characters is dropped (found
 * in nearly every text, it only costs the scan). A branch's requirements must all hold, and an
 * expression may match when one of its branches may. An expression with a branch that requires
 * nothing answers `undefined`: it always runs.
 */

const META = new Set(["\\", "^", "$", ".", "|", "?", "*", "+", "(", ")", "[", "]", "{", "}"]);

/** Literals one of which must occur. */
export type Requirement = readonly string[];
/** A top-level branch's requirements, which must all hold for it to match. */
export type Branch = readonly Requirement[];

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

/** The index just past the class that opens at `open`, or -1. */
function classEnd(source: string, open: number): number {
  for (let i = open + 1; i < source.length; i++) {
    if (source[i] === "\\") i++;
    else if (source[i] === "]") return i + 1;
  }
  return -1;
}

/**
 * The index just past the escape at `at` (a backslash): `\p{…}`, `\u{…}`, `\k<…>`, `\uXXXX`,
 * `\xXX` and `\cX` whole, so that none of their letters is read as text.
 */
function escapeEnd(source: string, at: number): number {
  const whole = /^\\(?:[pP]\{[^}]*\}|u\{[0-9a-fA-F]*\}|k<[^>]*>|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|c[A-Za-z])/.exec(source.slice(at, at + 64));
  return whole ? at + whole[0].length : Math.min(source.length, at + 2);
}

/** The quantifier at `at`, if any: its length, and whether it allows no repetition. */
function quantifierAt(source: string, at: number): { length: number; optional: boolean } {
  const c = source[at];
  let length = 0;
  let optional = false;
  if (c === "?" || c === "*") {
    length = 1;
    optional = true;
  } else if (c === "+") {
    length = 1;
  } else if (c === "{") {
    const bounds = /^\{(\d+)(?:,\d*)?\}/.exec(source.slice(at));
    if (!bounds) return { length: 0, optional: false };
    length = bounds[0].length;
    optional = Number(bounds[1]) === 0;
  }
  // A lazy quantifier's own `?`.
  if (length > 0 && source[at + length] === "?") length++;
  return { length, optional };
}

/** A requirement's worth: its shortest literal, spaces aside (longer literals are rarer). */
function worth(requirement: Requirement): number {
  return Math.min(...requirement.map((l) => l.trim().length));
}

/** Every requirement of a sequence (a branch without a top-level `|`), or undefined when its shape cannot be read. */
function sequenceRequirements(sequence: string): Requirement[] | undefined {
  const found: Requirement[] = [];
  let run = "";
  const endRun = (): void => {
    if (run !== "") found.push([run]);
    run = "";
  };
  let i = 0;
  while (i < sequence.length) {
    const c = sequence[i] ?? "";
    if (c === "\\" && /[^\p{L}\p{N}]/u.test(sequence[i + 1] ?? "a")) {
      // An escaped punctuation mark ("dr\. al") is that character, as text.
      const quantifier = quantifierAt(sequence, i + 2);
      if (!quantifier.optional) run += sequence[i + 1];
      if (quantifier.length > 0) endRun();
      i += 2 + quantifier.length;
    } else if (c === "\\") {
      endRun();
      i = escapeEnd(sequence, i);
      i += quantifierAt(sequence, i).length;
    } else if (c === "[") {
      endRun();
      const end = classEnd(sequence, i);
      if (end < 0) return undefined;
      i = end + quantifierAt(sequence, end).length;
    } else if (c === "(") {
      endRun();
      const end = groupEnd(sequence, i);
      if (end < 0) return undefined;
      const quantifier = quantifierAt(sequence, end);
      const lookAround = /^\(\?<?[=!]/.test(sequence.slice(i, i + 4));
      if (!lookAround && !quantifier.optional) {
        const named = /^\(\?<[^>]+>/.exec(sequence.slice(i));
        const bodyStart = sequence.startsWith("(?:", i) ? i + 3 : named ? i + named[0].length : i + 1;
        const alternatives = topLevel(sequence.slice(bodyStart, end - 1)).map(bestRequirement);
        if (alternatives.every((a) => a !== undefined)) found.push(alternatives.flat());
      }
      i = end + quantifier.length;
    } else if (META.has(c)) {
      endRun();
      i++;
      i += quantifierAt(sequence, i).length;
    } else {
      const quantifier = quantifierAt(sequence, i + 1);
      if (quantifier.length === 0) {
        run += c;
        i++;
        continue;
      }
      // "don'?t": the run ends before the optional character; "a+" needs its "a" once.
      if (!quantifier.optional) run += c;
      endRun();
      i += 1 + quantifier.length;
    }
  }
  endRun();
  return found;
}

/** The most telling requirement of a sequence, for a group's alternative. */
function bestRequirement(sequence: string): Requirement | undefined {
  const found = sequenceRequirements(sequence);
  if (!found || found.length === 0) return undefined;
  return found.reduce((best, r) => (worth(r) > worth(best) ? r : best));
}

/**
 * What a match of `source` requires, per top-level branch: a match of the expression is a match of
 * one branch, and a branch's requirements must all hold (one literal of each). Undefined when some
 * branch requires nothing worth checking: the expression always runs.
 */
export function requiredLiterals(source: string): Branch[] | undefined {
  const branches = topLevel(source).map((branch) => sequenceRequirements(branch)?.filter((r) => worth(r) >= 3));
  if (branches.some((b) => b === undefined || b.length === 0)) return undefined;
  return branches as Branch[];
}

const ASCII = 128;

/**
 * Which of a fixed set of strings occur in a text, found in one pass (Aho–Corasick): checking each
 * with `includes` scanned the text once per string, a quarter of the injection detector's time.
 * ASCII characters move through a dense table; others through per-state maps. Not re-entrant: the
 * answer is a table the set reuses.
 *
 * The table's columns are only the ASCII characters the literals use (any other one leads back to
 * the root from every state): with a column for each of the 128, the injection rules' table was
 * 1.5 MB and content safety's 2.9 MB, 0.4 and 0.9 MB so, in every process and detector worker. A
 * scan reads one more byte a character and is no slower end to end (docs/performance.md).
 */
export class LiteralSet {
  /** Per ASCII character, its column in #table; 0, the column of every character no literal uses. */
  readonly #column = new Uint8Array(ASCII);
  readonly #width: number;
  readonly #table: Int32Array;
  readonly #other: Map<number, number>[] = [];
  readonly #fail: number[] = [];
  /**
   * Per state, the literals that end there or at a state of its failure chain: the ids of state s
   * are #outputIds[#outputStart[s] .. #outputStart[s + 1]) (flat typed arrays: the scan reads
   * them at every character).
   */
  readonly #outputStart: Int32Array;
  readonly #outputIds: Int32Array;
  readonly #found: Uint8Array;
  readonly #foundList: Int32Array;
  #foundCount = 0;
  readonly #ids = new Map<string, number>();

  constructor(literals: Iterable<string>) {
    // The trie: edges in a growing list first, then flattened into the table.
    const edges: Map<number, number>[] = [new Map()];
    const outputs: number[][] = [[]];
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
          outputs.push([]);
          edges[state]?.set(c, next);
        }
        state = next;
      }
      outputs[state]?.push(id);
    }
    const states = edges.length;
    const characters: number[] = [];
    for (const map of edges) for (const c of map.keys()) if (c < ASCII && this.#column[c] === 0) this.#column[c] = characters.push(c);
    const width = (this.#width = characters.length + 1);
    this.#found = new Uint8Array(this.#ids.size);
    this.#foundList = new Int32Array(this.#ids.size);
    this.#fail = new Array<number>(states).fill(0);
    this.#table = new Int32Array(states * width);
    for (let s = 0; s < states; s++) this.#other.push(new Map());
    /** The child of `state` by the character of column k (column 0 has none). */
    const childOf = (state: number, k: number): number | undefined => (k === 0 ? undefined : edges[state]?.get(characters[k - 1]!));
    // Breadth first: a state's failure link is known before its children's.
    const queue: number[] = [];
    for (let k = 0; k < width; k++) {
      const child = childOf(0, k);
      this.#table[k] = child ?? 0;
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
      outputs[state]?.push(...(outputs[fail] ?? []));
      for (let k = 0; k < width; k++) {
        const child = childOf(state, k);
        if (child === undefined) {
          this.#table[state * width + k] = this.#table[fail * width + k] ?? 0;
        } else {
          this.#table[state * width + k] = child;
          this.#fail[child] = this.#table[fail * width + k] ?? 0;
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
    this.#outputStart = new Int32Array(states + 1);
    for (let s = 0; s < states; s++) this.#outputStart[s + 1] = this.#outputStart[s]! + (outputs[s]?.length ?? 0);
    this.#outputIds = Int32Array.from(outputs.flat());
  }

  #step(state: number, c: number): number {
    if (c < ASCII) return this.#table[state * this.#width + this.#column[c]!] ?? 0;
    let s = state;
    for (;;) {
      const next = this.#other[s]?.get(c);
      if (next !== undefined) return next;
      if (s === 0) return 0;
      s = this.#fail[s] ?? 0;
    }
  }

  /** How many distinct literals the set holds (ids are 0 … size − 1). */
  get size(): number {
    return this.#ids.size;
  }

  /** The ids of the literals the last scan found, in the order it found them. */
  foundIds(): Int32Array {
    return this.#foundList.subarray(0, this.#foundCount);
  }

  /** The id of a literal given to the constructor. */
  idOf(literal: string): number {
    const id = this.#ids.get(literal);
    if (id === undefined) throw new Error(`unknown literal ${literal}`);
    return id;
  }

  /** Marks the literals that occur in `text`; read the answer with the returned table, by id. */
  scan(text: string): Uint8Array {
    const found = this.#found;
    const table = this.#table;
    const column = this.#column;
    const width = this.#width;
    const start = this.#outputStart;
    const ids = this.#outputIds;
    const list = this.#foundList;
    found.fill(0);
    let count = 0;
    let state = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      state = c < ASCII ? table[state * width + column[c]!]! : this.#step(state, c);
      for (let k = start[state]!, end = start[state + 1]!; k < end; k++) {
        const id = ids[k]!;
        if (found[id] === 0) {
          found[id] = 1;
          list[count++] = id;
        }
      }
    }
    this.#foundCount = count;
    return found;
  }
}

/**
 * Expressions with their literals, scanned for once per text: `mayMatch(i)` is false when
 * expression i cannot match. Each found literal marks the requirements it meets, and a branch
 * whose requirements are all met marks its expression, so a text costs the literals it has, and
 * `mayMatch` is one byte read: the injection rules ask it for each of their hundred expressions
 * on every text, and walking each one's branches there was the rule loop's largest cost
 * (docs/performance.md, "The detectors' rule loops").
 */
export class LiteralFilter {
  readonly #set: LiteralSet;
  /** Per literal id, the branches and requirement bits it meets: [#userStart[id], #userStart[id + 1]). */
  readonly #userStart: Int32Array;
  readonly #userBranch: Int32Array;
  readonly #userBit: Int32Array;
  /** Per branch, the bits of all its requirements. */
  readonly #full: Int32Array;
  /** Per branch, the bits of the requirements the last text met. */
  readonly #met: Int32Array;
  /** Per branch, its expression. */
  readonly #expressionOf: Int32Array;
  /** Per expression, 1 when it runs whatever the text (it has a branch that requires nothing). */
  readonly #always: Uint8Array;
  /** Per expression, 1 when the last text met all the requirements of one of its branches, or it always runs. */
  readonly #may: Uint8Array;

  constructor(branchesPerExpression: readonly (readonly Branch[] | undefined)[]) {
    this.#set = new LiteralSet(branchesPerExpression.flatMap((b) => b?.flat(2) ?? []));
    const branches = branchesPerExpression.flatMap((b) => b ?? []);
    this.#expressionOf = Int32Array.from(branchesPerExpression.flatMap((b, e) => (b ?? []).map(() => e)));
    this.#always = Uint8Array.from(branchesPerExpression, (b) => (b === undefined || b.length === 0 || b.some((requirements) => requirements.length === 0) ? 1 : 0));
    this.#may = new Uint8Array(branchesPerExpression.length);
    this.#full = new Int32Array(branches.length);
    this.#met = new Int32Array(branches.length);
    const users: { branch: number; bit: number }[][] = [];
    branches.forEach((requirements, branch) => {
      if (requirements.length > 31) throw new Error("a branch with more than 31 requirements");
      requirements.forEach((literals, j) => {
        this.#full[branch]! |= 1 << j;
        for (const literal of literals) (users[this.#set.idOf(literal)] ??= []).push({ branch, bit: 1 << j });
      });
    });
    const literals = this.#set.size;
    this.#userStart = new Int32Array(literals + 1);
    for (let id = 0; id < literals; id++) this.#userStart[id + 1] = this.#userStart[id]! + (users[id]?.length ?? 0);
    const all = users.flatMap((u) => u ?? []);
    this.#userBranch = Int32Array.from(all, (u) => u.branch);
    this.#userBit = Int32Array.from(all, (u) => u.bit);
  }

  /** Reads a text; until the next call, {@link mayMatch} answers for it. */
  read(text: string): void {
    this.#set.scan(text);
    const met = this.#met;
    const full = this.#full;
    const may = this.#may;
    met.fill(0);
    may.set(this.#always);
    for (const id of this.#set.foundIds()) {
      for (let k = this.#userStart[id]!, end = this.#userStart[id + 1]!; k < end; k++) {
        const branch = this.#userBranch[k]!;
        if ((met[branch]! |= this.#userBit[k]!) === full[branch]) may[this.#expressionOf[branch]!] = 1;
      }
    }
  }

  mayMatch(expression: number): boolean {
    return this.#may[expression] === 1;
  }
}

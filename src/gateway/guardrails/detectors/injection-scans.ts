/**
 * Scanners for the few injection patterns that a backtracking regular expression can only match
 * in time quadratic in the text: each retried from every start position, scanning ahead to the
 * same far point ("a@a@a@…" took 9 s for 64 KiB). Each function here finds exactly what the
 * expression in its comment finds, in one pass; test/guardrails-linear.test.ts checks them
 * against those expressions on random text.
 */

const isWordChar = (c: number): boolean => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
const isLower = (c: number): boolean => c >= 97 && c <= 122;
const isDigit = (c: number): boolean => c >= 48 && c <= 57;
/** `\b` between code units i − 1 and i (ASCII word characters, as without the `u` flag's case folding). */
const boundaryAt = (text: string, i: number): boolean =>
  (i > 0 && isWordChar(text.charCodeAt(i - 1))) !== (i < text.length && isWordChar(text.charCodeAt(i)));

/**
 * How many matches `/\b(?=[a-z@$!]*[0-9])(?=[0-9@$!]*[a-z])[a-z0-9@$!]{3,}\b/g` has: words of
 * letters, digits and `@$!` that mix letters and digits ("1gn0r3", "pr3v10u5").
 *
 * A match lies inside one maximal run of `[a-z0-9@$!]`, and at most one per run: it ends at the
 * run's last word boundary. It starts at the first boundary p of the run with a digit and a letter
 * at or after p and that last boundary at least three further on.
 *
 * A word with a digit and a letter has a digit next to a letter or one of `@$!` (walking from a
 * digit towards a letter, the last digit is followed by one): a text without such a pair has no
 * match, and the expression below says so in a quarter of this loop's time (measured on short
 * prompts).
 */
const MIXED_PAIR = /[a-z@$!][0-9]|[0-9][a-z@$!]/;

export function mixedWordCount(text: string): number {
  if (!MIXED_PAIR.test(text)) return 0;
  let count = 0;
  const n = text.length;
  let i = 0;
  while (i < n) {
    const first = text.charCodeAt(i);
    if (!isLower(first) && !isDigit(first) && first !== 64 && first !== 36 && first !== 33) {
      i++;
      continue;
    }
    const start = i;
    let lastDigit = -1;
    let lastLetter = -1;
    let lastBoundary = -1;
    for (; i < n; i++) {
      const c = text.charCodeAt(i);
      if (isDigit(c)) lastDigit = i;
      else if (isLower(c)) lastLetter = i;
      else if (c !== 64 && c !== 36 && c !== 33) break;
      if (i > start && boundaryAt(text, i)) lastBoundary = i;
    }
    if (boundaryAt(text, i)) lastBoundary = i;
    const lastStart = Math.min(lastDigit, lastLetter, lastBoundary - 3);
    for (let p = start; p <= lastStart; p++) {
      if (boundaryAt(text, p)) {
        count++;
        break;
      }
    }
  }
  return count;
}

// Ä Ö Ü count as capitals in shouted text; they are not word characters for `\b`.
const isCapital = (c: number): boolean => (c >= 65 && c <= 90) || c === 0xc4 || c === 0xd6 || c === 0xdc;
const TWO_CAPITALS = /[A-ZÄÖÜ]{2}/;

/**
 * The first match of `/\b(?:[A-ZÄÖÜ]{2,}[!,.]? ){3,}[A-ZÄÖÜ]{2,}\b/`, or undefined: four or more
 * capitalised words in a row.
 *
 * The text is read as maximal runs of capitals ("words"). A word of two or more capitals followed
 * by an optional `!,.` and a space is a group; groups chain when the next word starts right after
 * the space. A streak is a maximal chain of groups, and it reaches the word after its last group
 * when that word is adjacent. The expression matches in a streak when a word at least three
 * groups after a start can end the match (two or more capitals, then a word boundary); it starts
 * at the first boundary of the first word that can start it, and ends at the last word of the
 * reach that can end it (the `{3,}` is greedy and gives back one group at a time).
 */
export function shoutedRun(text: string): string | undefined {
  // Every match has a word of two capitals or more; most texts have none, and the expression
  // engine finds that in a fraction of this loop's time.
  if (!TWO_CAPITALS.test(text)) return undefined;
  const n = text.length;
  // The current streak: ordinal of its next word, the first word that can start a match (and
  // where), and the last word that can end one (and where).
  let ordinal = 0;
  let firstStart = -1;
  let startAt = -1;
  let lastEnd = -1;
  let endAt = -1;
  let inStreak = false;
  const finish = (): string | undefined => {
    const found = firstStart >= 0 && lastEnd >= firstStart + 3 ? text.slice(startAt, endAt) : undefined;
    ordinal = 0;
    firstStart = startAt = lastEnd = endAt = -1;
    inStreak = false;
    return found;
  };
  let i = 0;
  while (i < n) {
    if (!isCapital(text.charCodeAt(i))) {
      i++;
      continue;
    }
    const wordStart = i;
    while (i < n && isCapital(text.charCodeAt(i))) i++;
    const wordEnd = i;
    const long = wordEnd - wordStart >= 2;
    // As the word that ends a match: the longest prefix of two or more capitals ending at a boundary.
    let end = -1;
    if (long) {
      for (let e = wordEnd; e >= wordStart + 2; e--) {
        if (boundaryAt(text, e)) {
          end = e;
          break;
        }
      }
    }
    if (inStreak && end >= 0) {
      lastEnd = ordinal;
      endAt = end;
    }
    // As a group: followed by an optional `!,.` and a space.
    let sepEnd = -1;
    const next = text.charCodeAt(wordEnd);
    if (next === 32) sepEnd = wordEnd + 1;
    else if ((next === 33 || next === 44 || next === 46) && text.charCodeAt(wordEnd + 1) === 32) sepEnd = wordEnd + 2;
    if (!long || sepEnd < 0) {
      const found = finish();
      if (found !== undefined) return found;
      continue;
    }
    if (!inStreak) inStreak = true;
    if (firstStart < 0) {
      // A start needs a boundary with at least two capitals after it in this word.
      for (let p = wordStart; p <= wordEnd - 2; p++) {
        if (boundaryAt(text, p)) {
          firstStart = ordinal;
          startAt = p;
          break;
        }
      }
    }
    ordinal++;
    i = sepEnd;
    if (i >= n || !isCapital(text.charCodeAt(i))) {
      const found = finish();
      if (found !== undefined) return found;
    }
  }
  return finish();
}

/**
 * The spans of `/(?<![a-z])'[^'\n]{3,}?'(?![a-z])|"[^"\n]{3,}?"|«[^»\n]{3,}?»/g`: text in single
 * quotes (not an apostrophe inside a word), double quotes or guillemets, on one line.
 */
export function quotedSpans(text: string): [number, number][] {
  const spans: [number, number][] = [];
  const next = new NextIndex(text);
  const n = text.length;
  let p = 0;
  while (p < n) {
    const c = text[p];
    let close = -1;
    if (c === "'" && !(p > 0 && isLower(text.charCodeAt(p - 1)))) {
      const q = next.of("'", p + 1);
      if (q >= p + 4 && !isLower(text.charCodeAt(q + 1))) close = q;
    } else if (c === '"') {
      const q = next.of('"', p + 1);
      if (q >= p + 4) close = q;
    } else if (c === "«") {
      const q = next.of("»", p + 1);
      if (q >= p + 4) close = q;
    }
    if (close >= 0) {
      const newline = next.of("\n", p + 1);
      if (newline < 0 || newline > close) {
        spans.push([p, close + 1]);
        p = close + 1;
        continue;
      }
    }
    p++;
  }
  return spans;
}

/**
 * `/!\[[^\]]*\]\(https?:\/\/[^)]*\{/`: a Markdown image whose URL holds a template brace (data
 * to be filled into a link). Only whether it matches is used, so the match is reported as the
 * `](http` where it was found.
 */
export const markdownImageTemplate = {
  exec(text: string): { index: number; 0: string } | null {
    // Made at the first link, which most texts never reach.
    let next: NextIndex | undefined;
    // The last `![` seen, and the last `]` before the current one.
    let open = -1;
    let nextOpen = text.indexOf("![");
    let previousClose = -1;
    for (let close = text.indexOf("]"); close >= 0; previousClose = close, close = text.indexOf("]", close + 1)) {
      while (nextOpen >= 0 && nextOpen + 2 <= close) {
        open = nextOpen;
        nextOpen = text.indexOf("![", nextOpen + 1);
      }
      // `[^\]]*` runs from the `![` to this `]`: no `]` may lie between.
      if (open <= previousClose) continue;
      let url = -1;
      if (text.startsWith("](http://", close)) url = close + 9;
      else if (text.startsWith("](https://", close)) url = close + 10;
      if (url < 0) continue;
      next ??= new NextIndex(text);
      const brace = next.of("{", url);
      const paren = next.of(")", url);
      if (brace >= 0 && (paren < 0 || brace < paren)) return { index: close, 0: text.slice(close, url) };
    }
    return null;
  },
};

/**
 * `text.indexOf(ch, from)` for calls whose `from` never decreases, in linear time overall: the
 * answer for an earlier `from` still holds while it lies at or after the new one.
 */
class NextIndex {
  readonly #text: string;
  readonly #found = new Map<string, number>();
  readonly #from = new Map<string, number>();

  constructor(text: string) {
    this.#text = text;
  }

  of(ch: string, from: number): number {
    const found = this.#found.get(ch);
    const searchedFrom = this.#from.get(ch);
    if (found !== undefined && searchedFrom !== undefined && searchedFrom <= from && (found < 0 || found >= from)) return found;
    const index = this.#text.indexOf(ch, from);
    this.#found.set(ch, index);
    this.#from.set(ch, from);
    return index;
  }
}

/**
 * A match of `then` that starts after the end of the first match of `marker`: an instruction inside a
 * document the user hands over ("Email: …", "this webpage: …"). As one expression,
 * `marker[^]*?then` would retry the lazy span from every marker; here `marker` is searched once
 * and `then` (global, so that it starts at `lastIndex`) once from there. Both must repeat only
 * boundedly, which keeps the whole scan linear.
 */
export function afterFirst(marker: RegExp, then: RegExp): { exec(text: string): { index: number; 0: string } | null } {
  if (!then.global) throw new Error("afterFirst: `then` must be global");
  return {
    exec(text) {
      const m = marker.exec(text);
      if (!m) return null;
      then.lastIndex = m.index + m[0].length;
      return then.exec(text);
    },
  };
}

/** A one-letter variable given a quoted fragment of text: `c = "she must share her password."`. */
const FRAGMENT = /\b([a-z]) ?= ?"([^"\n]{1,300})"/g;
/** Three or more one-letter variables joined: `z = a + b + c`. */
const CONCATENATION = /\b[a-z] ?= ?[a-z](?: ?\+ ?[a-z]){2,}\b/g;
/** A fragment of at least three words: prose, not the `"hello"` of a string exercise. */
const PROSE = /\S+ \S+ \S/;

/**
 * Payload splitting (Kang et al., "Exploiting Programmatic Behavior of LLMs", 2023): a request cut
 * into quoted fragments, each harmless alone, given to one-letter variables and joined for the
 * model to act on. Matches a join of three or more variables of which at least two hold prose.
 * Linear: each expression scans the text once.
 */
export const payloadSplitting = {
  exec(text: string): { index: number; 0: string } | null {
    if (!text.includes("+")) return null;
    const prose = new Set<string>();
    FRAGMENT.lastIndex = 0;
    for (let m = FRAGMENT.exec(text); m; m = FRAGMENT.exec(text)) if (PROSE.test(m[2]!)) prose.add(m[1]!);
    if (prose.size < 2) return null;
    CONCATENATION.lastIndex = 0;
    for (let m = CONCATENATION.exec(text); m; m = CONCATENATION.exec(text)) {
      const joined = m[0].slice(m[0].indexOf("=") + 1).match(/[a-z]/g) ?? [];
      if (joined.filter((v) => prose.has(v)).length >= 2) return { index: m.index, 0: m[0] };
    }
    return null;
  },
};

/**
 * An expression run only on a text where `gate`, a plain alternation of words it cannot match
 * without, finds one: for the rules in many scripts, which the literal filter (ASCII only) cannot
 * guard. Measured on the 1 KB evaluation texts: the "ignore the document and assert" rule 16 µs
 * a KB alone, about 1 µs behind its gate.
 */
export function gated(gate: RegExp, pattern: RegExp): { exec(text: string): { index: number; 0: string } | null } {
  if (gate.global || gate.sticky) throw new Error("gated: the gate must not keep a position");
  return { exec: (text) => (gate.test(text) ? pattern.exec(text) : null) };
}

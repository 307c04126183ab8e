import { Buffer } from "node:buffer";

/**
 * The injection rules' text, made in one pass each. Both functions replace regular expressions
 * that gave the same answer (test/guardrails-linear.test.ts compares them on random text) at
 * 1.5 to 4 times the cost, measured on prose, the evaluation texts and short prompts: six
 * `replace` passes over every text checked, and a base64 search that the expression engine
 * retried from every position of every run of letters.
 */

const SPACE = 0x20;
const NEWLINE = 0x0a;
const RETURN = 0x0d;
const BACKSLASH = 0x5c;
const N = 0x6e;

/** `\s` without the line breaks that matter here (`\n` is kept, `\r` became one). */
function isSpace(c: number): boolean {
  return (
    c === SPACE ||
    c === 0x09 ||
    c === 0x0b ||
    c === 0x0c ||
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

/** Curly single quotes and primes become `'`, curly double quotes `"`. */
function straightQuote(c: number): number {
  if (c === 0x2018 || c === 0x2019 || c === 0x201b || c === 0x2032) return 0x27;
  if (c === 0x201c || c === 0x201d || c === 0x201e || c === 0x2033) return 0x22;
  return c;
}

let buffer = new Uint16Array(1024);

/**
 * What {@link normalizeSpacing} changes: a curly quote or prime, a written `\n`, white space other
 * than a space or a line break (`\r` among it), and a space next to a space or a line break. A
 * text without any is returned as it is, told by this expression in a third of the loop's time
 * (measured on short prompts, which seldom have one).
 */
const RESPACED = /[\u2018\u2019\u201b\u2032\u201c\u201d\u201e\u2033]|\\n|[^\S \n]| [ \n]|\n /;

/**
 * Straight quotes, a written `\n` made a line break, `\r\n` and `\r` made `\n`, runs of other
 * white space made one space, and no space next to a line break. The same as, in this order:
 *
 *     .replace(/[\u2018\u2019\u201b\u2032]/g, "'").replace(/[\u201c\u201d\u201e\u2033]/g, '"')
 *     .replace(/\\n/g, "\n").replace(/\r\n?/g, "\n").replace(/[^\S\n]+/g, " ").replace(/ ?\n ?/g, "\n")
 */
export function normalizeSpacing(text: string): string {
  if (!RESPACED.test(text)) return text;
  if (buffer.length < text.length) buffer = new Uint16Array(text.length * 2);
  const out = buffer;
  let length = 0;
  let space = false;
  let afterBreak = false;
  let changed = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    let lineBreak = c === NEWLINE;
    if (c === BACKSLASH && text.charCodeAt(i + 1) === N) {
      lineBreak = true;
      i++;
    } else if (c === RETURN) {
      lineBreak = true;
      // "\r\n", and "\r" before a written "\n", which becomes a line break first.
      if (text.charCodeAt(i + 1) === NEWLINE) i++;
      else if (text.charCodeAt(i + 1) === BACKSLASH && text.charCodeAt(i + 2) === N) i += 2;
    }
    if (lineBreak) {
      changed ||= c !== NEWLINE || space;
      space = false;
      afterBreak = true;
      out[length++] = NEWLINE;
      continue;
    }
    if (isSpace(c)) {
      changed ||= c !== SPACE || space || afterBreak;
      if (!afterBreak) space = true;
      continue;
    }
    if (space) out[length++] = SPACE;
    space = false;
    afterBreak = false;
    const straight = straightQuote(c);
    changed ||= straight !== c;
    out[length++] = straight;
  }
  if (space) out[length++] = SPACE;
  if (!changed) return text;
  let result = "";
  // In chunks: a call's arguments are limited in number.
  for (let at = 0; at < length; at += 8192) {
    // A typed array serves as the arguments' list without a copy into an array.
    result += String.fromCharCode.apply(null, out.subarray(at, Math.min(length, at + 8192)) as unknown as number[]);
  }
  return result;
}

function isBase64(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2f;
}

/** A group of eight binary digits standing alone, and two of them in a row: where {@link binaryRuns} looks further. */
const BINARY_PAIR = /(?:^|\s)[01]{8}\s+[01]{8}(?:\s|$)/;
const WORDS = /\S+/g;

/**
 * Bytes written as groups of eight binary digits ("01001001 01100111 …"), eight groups or more
 * in a row, each run decoded as UTF-8: text hidden from the rules as base64 hides it. Linear: the
 * words are read once, and only in a text that has two such groups in a row.
 */
export function binaryRuns(text: string): string[] {
  if (!BINARY_PAIR.test(text)) return [];
  const runs: string[] = [];
  let bytes: number[] = [];
  const flush = () => {
    if (bytes.length >= 8) runs.push(Buffer.from(bytes).toString("utf8"));
    bytes = [];
  };
  for (const [word] of text.matchAll(WORDS)) {
    if (word.length === 8 && /^[01]{8}$/.test(word)) bytes.push(Number.parseInt(word, 2));
    else flush();
  }
  flush();
  return runs;
}

/** The matches of `/[A-Za-z0-9+/]{24,}={0,2}/g`: runs of 24 or more base64 characters, with their padding. */
export function base64Runs(text: string): string[] {
  const runs: string[] = [];
  let i = 0;
  while (i < text.length) {
    if (!isBase64(text.charCodeAt(i))) {
      i++;
      continue;
    }
    const start = i;
    while (i < text.length && isBase64(text.charCodeAt(i))) i++;
    if (i - start < 24) continue;
    let end = i;
    while (end < text.length && end - i < 2 && text.charCodeAt(end) === 0x3d) end++;
    runs.push(text.slice(start, end));
    i = end;
  }
  return runs;
}

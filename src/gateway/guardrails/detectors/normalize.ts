/**
 * NFKC in time linear in the text. ICU puts a run of combining marks in canonical order by
 * insertion, so a long run of marks of mixed classes ("a" and 100,000 alternating U+0301 U+0316)
 * costs the square of its length: seconds for a 128 KB prompt. Unicode's Stream-Safe Text Format
 * (UAX #15) bounds such runs by putting U+034F COMBINING GRAPHEME JOINER after every 30 non-starters;
 * a joiner blocks reordering, so each run sorts in constant time. Real text never has more than a
 * handful of marks in a row, so only crafted text changes.
 *
 * Non-starters are the marks (\p{M}) and the half-width voiced sound marks U+FF9E and U+FF9F, the
 * only other code points whose NFKD begins with one (checked over all of Unicode with Node 24's ICU).
 */
const LONG_MARK_RUN = /[\p{M}\uFF9E\uFF9F]{30}(?=[\p{M}\uFF9E\uFF9F])/gu;

/**
 * A code unit from U+0300 up, where the first marks are: most prompts have none. One range, which
 * the expression engine scans far faster than the Unicode class above (measured: a short prompt
 * 0.7–0.8 → 0.2 µs warm, 2.3–3.3 → 0.6–1.3 µs with the caches cold, as between two requests of a
 * busy gateway).
 */
const BEYOND_LATIN = /[^\u0000-\u02FF]/;

export function streamSafe(text: string): string {
  return BEYOND_LATIN.test(text) ? text.replace(LONG_MARK_RUN, "$&\u034F") : text;
}

/**
 * What lower case leaves that the same word written another way does not have: the dot that
 * upper-case Turkish İ keeps as U+0307 ("TALİMATLARI" lowers to "tali̇matlari", not "talimatlari"),
 * and Arabic's optional vowel marks and the tatweel that stretches a word ("انسَ" is "انس").
 */
const OPTIONAL_MARKS = /(?<=i)\u0307|[\u0640\u064B-\u065F\u0670]/g;

/** NFKC of the stream-safe text. */
export function nfkc(text: string): string {
  return streamSafe(text).normalize("NFKC");
}

let lastFolded: { text: string; folded: string } | undefined;

/**
 * NFKC, lower case: what the injection and content detectors read. The last answer is kept,
 * because the guardrails of a stage read the same text one after the other, and folding it is
 * a good part of a short text's check.
 */
export function foldText(text: string): string {
  if (lastFolded?.text !== text) {
    const lower = nfkc(text).toLowerCase();
    lastFolded = { text, folded: BEYOND_LATIN.test(lower) ? lower.replace(OPTIONAL_MARKS, "") : lower };
  }
  return lastFolded.folded;
}

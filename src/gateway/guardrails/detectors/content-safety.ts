import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { foldText } from "./normalize.ts";
import { LiteralFilter, requiredLiterals } from "./rule-literals.ts";

/**
 * Content safety: a score in [0, 1] per category from weighted lexicons (content-lexicon.json).
 *
 * - Terms (one or more words; a trailing `*` matches any word ending) are found with a word trie.
 *   Each distinct term adds its weight once; repeats add a fifth of it.
 * - Patterns (regular expressions) catch phrasing that single words cannot: directed insults
 *   ("you are a …"), threats ("I'm going to … you"), dehumanizing statements about a group.
 * - Idioms ("kill the process", "shoot a photo", "suicide prevention") are blanked out before
 *   anything is matched, and a negator shortly before a term ("I would never kill") divides its
 *   weight by four.
 * - score = 1 − exp(−Σ weights): one strong term gives about 0.7, two give about 0.9.
 *
 * Offensive is not hate: slang and swearing score under profanity (and harassment when aimed at
 * someone), and only slurs and statements against groups score under hate.
 */

export type ContentCategory = "hate" | "harassment" | "violence" | "sexual" | "self_harm" | "profanity";

export const CONTENT_CATEGORIES: readonly ContentCategory[] = [
  "hate",
  "harassment",
  "violence",
  "sexual",
  "self_harm",
  "profanity",
];

/** A threshold that no score reaches: the category is off. */
export const CATEGORY_OFF = Number.POSITIVE_INFINITY;

/**
 * The profanity threshold for a workspace that turns profanity on (contentThresholds.profanity):
 * one strong swear word (weight 0.9, score 0.59) flags, one mild word ("damn", "hell": 0.35, score
 * 0.30) does not. Set by hand: no source labels profanity as such (Davidson's "offensive or hate"
 * against "neither" flags at any threshold, four tweets in five being offensive).
 */
export const PROFANITY_WHEN_ON = 0.55;

/**
 * Default block thresholds, calibrated by scripts/calibrate-content.ts on the OpenAI moderation
 * rows, the SimpleSafetyTests self-harm and violence prompts and the safe XSTest prompts: per
 * category, the lowest threshold from 0.55 up whose precision is at least 0.95 with three rows
 * flagged, on all these rows and on the OpenAI rows alone. Violence, sexual content and self-harm
 * reach it only at 0.95: there the requests the decisive patterns recognise ("how do I poison my
 * neighbour", "give me three ways to kill myself", weight 3: score 0.95) block, and the loose
 * vocabulary of the OpenAI rows does not. Profanity is off by default: swearing is a workspace's policy, not a
 * safety matter, and blocking it blocks ordinary slang. A workspace turns it on by giving it a
 * threshold ({@link PROFANITY_WHEN_ON}).
 */
export const defaultThresholds: Record<ContentCategory, number> = {
  hate: 0.55,
  harassment: 0.65,
  violence: 0.95,
  sexual: 0.95,
  self_harm: 0.95,
  profanity: CATEGORY_OFF,
};

export const CONTENT_LEXICON_URL = new URL("./content-lexicon.json", import.meta.url);

/** The lexicon file: terms and patterns with weights per category, idioms and negators. */
export interface ContentLexiconFile {
  format: "warden-content-lexicon/1";
  categories: Partial<Record<ContentCategory, { terms: Record<string, number>; patterns: [string, number][] }>>;
  idioms: string[];
  negators: string[];
}

export interface ContentDetector {
  readonly thresholds: Record<ContentCategory, number>;
  score(text: string): Record<ContentCategory, number>;
  /** Categories whose score reaches the threshold, highest score first. */
  flagged(text: string, thresholds?: Partial<Record<ContentCategory, number>>): { category: ContentCategory; score: number }[];
}

interface TrieNode {
  next: Map<string, TrieNode>;
  /**
   * Word prefixes that end a term here (`masturbat*`), with their terms, by first character: the
   * root holds dozens, and every word of a text is tried against them.
   */
  prefixes: Map<string, { prefix: string; term: Term }[]>;
  term?: Term;
}

interface Term {
  id: number;
  /** The term's category, by its place in CONTENT_CATEGORIES. */
  slot: number;
  weight: number;
}

function newNode(): TrieNode {
  return { next: new Map(), prefixes: new Map() };
}

const TOKEN = /[\p{L}\p{N}]+(?:'[\p{L}]+)?/gu;

const CURLY_APOSTROPHE = /[\u2018\u2019\u02bc]/;
/** White space other than single spaces: a tab, a line break, two spaces in a row. */
const UNEVEN_SPACE = /[^\S ]|\s\s/;

/**
 * NFKC, lower case, straight apostrophes, a few HTML entities, single spaces. Each replacement
 * runs only when the text has what it replaces: a replacement copies the text even when it
 * changes nothing (`\s+` matches every space), and most texts have nothing to replace.
 */
export function normalizeForContent(text: string): string {
  let norm = foldText(text);
  if (norm.includes("&")) {
    norm = norm
      .replace(/&amp;/g, "&")
      .replace(/&#8220;|&#8221;|&quot;/g, '"')
      .replace(/&#8217;|&#39;/g, "'");
  }
  if (CURLY_APOSTROPHE.test(norm)) norm = norm.replace(/[\u2018\u2019\u02bc]/g, "'");
  if (UNEVEN_SPACE.test(norm)) norm = norm.replace(/\s+/g, " ");
  return norm;
}

function tokens(text: string): string[] {
  return text.match(TOKEN) ?? [];
}

function isCategory(name: string): name is ContentCategory {
  return (CONTENT_CATEGORIES as readonly string[]).includes(name);
}

/** Parses and checks a lexicon file; throws with the reason when it is not one. */
export function parseContentLexicon(json: string): ContentLexiconFile {
  const raw: unknown = JSON.parse(json);
  if (typeof raw !== "object" || raw === null) throw new Error("content lexicon: not an object");
  const file = raw as Partial<ContentLexiconFile>;
  if (file.format !== "warden-content-lexicon/1") throw new Error(`content lexicon: unknown format ${String(file.format)}`);
  if (typeof file.categories !== "object" || file.categories === null) throw new Error("content lexicon: no categories");
  for (const name of Object.keys(file.categories)) {
    if (!isCategory(name)) throw new Error(`content lexicon: unknown category ${name}`);
  }
  if (!Array.isArray(file.idioms) || !Array.isArray(file.negators)) throw new Error("content lexicon: idioms and negators must be lists");
  return file as ContentLexiconFile;
}

export function createContentDetector(
  file: ContentLexiconFile,
  thresholds: Record<ContentCategory, number> = defaultThresholds,
): ContentDetector {
  // Build the word trie.
  const root = newNode();
  let nextId = 0;
  for (const [slot, category] of CONTENT_CATEGORIES.entries()) {
    const entry = file.categories[category];
    if (!entry) continue;
    for (const [phrase, weight] of Object.entries(entry.terms)) {
      const words = phrase.split(" ");
      const term: Term = { id: nextId++, slot, weight };
      let node = root;
      for (let i = 0; i < words.length; i++) {
        const word = words[i] ?? "";
        const last = i === words.length - 1;
        if (last && word.endsWith("*")) {
          const prefix = word.slice(0, -1);
          const first = prefix.charAt(0);
          node.prefixes.set(first, [...(node.prefixes.get(first) ?? []), { prefix, term }]);
          break;
        }
        let child = node.next.get(word);
        if (!child) {
          child = newNode();
          node.next.set(word, child);
        }
        node = child;
        if (last) node.term = term;
      }
    }
  }
  // Each expression with the literals it cannot match without (rule-literals.ts): most texts lack
  // some of an expression's literals, and a lookup is cheaper than running it.
  const patterns = CONTENT_CATEGORIES.flatMap((category, slot) =>
    (file.categories[category]?.patterns ?? []).map(([source, weight]) => ({ slot, weight, source, pattern: new RegExp(source, "u") })),
  );
  const idioms = file.idioms.map((source) => new RegExp(source, "gu"));
  // Idioms first, then patterns: one scan finds the literals of both.
  const filter = new LiteralFilter([...file.idioms.map(requiredLiterals), ...patterns.map((p) => requiredLiterals(p.source))]);
  const negators = new Set(file.negators);
  // Sums and scores by category position, not by name: a property named by a variable that takes
  // six names is a megamorphic load or store, some 100 instructions each, and a text's check made
  // some thirty of them (docs/performance.md, "The detectors' rule loops"). Not re-entrant, as the
  // literal filter is not.
  const sums = new Float64Array(CONTENT_CATEGORIES.length);
  const scores = new Float64Array(CONTENT_CATEGORIES.length);
  const defaults = Float64Array.from(CONTENT_CATEGORIES, (c) => thresholds[c]);
  /** Each overrides object's thresholds by position (a guardrail's, kept as long as its snapshot). */
  const resolved = new WeakMap<Partial<Record<ContentCategory, number>>, Float64Array>();
  const thresholdsOf = (overrides: Partial<Record<ContentCategory, number>>): Float64Array => {
    let list = resolved.get(overrides);
    if (!list) {
      list = Float64Array.from(CONTENT_CATEGORIES, (c) => overrides[c] ?? thresholds[c]);
      resolved.set(overrides, list);
    }
    return list;
  };

  /** Fills `scores`, by category position. */
  const scoreInto = (text: string): void => {
    let norm = normalizeForContent(text);
    // Blanking turns an idiom into a run of spaces, which makes no idiom literal; the patterns read
    // the blanked text, scanned again only when something was blanked (rarely).
    filter.read(norm);
    const read = norm;
    for (let i = 0; i < idioms.length; i++) if (filter.mayMatch(i)) norm = norm.replace(idioms[i]!, (m) => " ".repeat(m.length));
    if (norm !== read) filter.read(norm);
    const words = tokens(norm);
    sums.fill(0);
    // Terms already credited, made when the first is (most texts have none).
    let seen: Set<number> | undefined;
    const credit = (term: Term, start: number): void => {
      let w = term.weight;
      for (let k = Math.max(0, start - 3); k < start; k++) {
        if (negators.has(words[k] ?? "")) w /= 4;
      }
      seen ??= new Set();
      if (seen.has(term.id)) w /= 5;
      seen.add(term.id);
      sums[term.slot]! += w;
    };
    for (let i = 0; i < words.length; i++) {
      let node: TrieNode | undefined = root;
      for (let j = i; j < words.length && node; j++) {
        const word = words[j]!;
        const prefixes = node.prefixes.size > 0 ? node.prefixes.get(word.charAt(0)) : undefined;
        if (prefixes) for (const p of prefixes) if (word.startsWith(p.prefix)) credit(p.term, i);
        node = node.next.get(word);
        if (node?.term) credit(node.term, i);
      }
    }
    for (let i = 0; i < patterns.length; i++) {
      const p = patterns[i]!;
      if (filter.mayMatch(idioms.length + i) && p.pattern.test(norm)) sums[p.slot]! += p.weight;
    }
    // A safe context (a game, a film) weighs negatively; a score is never below 0.
    for (let c = 0; c < sums.length; c++) scores[c] = Math.round((1 - Math.exp(-Math.max(0, sums[c]!))) * 10000) / 10000;
  };

  return {
    thresholds,
    score(text) {
      // Off the gateway's path (the guardrails call flagged): by name, as CONTENT_CATEGORIES orders them.
      scoreInto(text);
      return Object.fromEntries(CONTENT_CATEGORIES.map((c, slot) => [c, scores[slot]!])) as Record<ContentCategory, number>;
    },
    flagged(text, overrides) {
      scoreInto(text);
      const over = overrides ? thresholdsOf(overrides) : defaults;
      const found: { category: ContentCategory; score: number }[] = [];
      for (let c = 0; c < scores.length; c++) if (scores[c]! >= over[c]!) found.push({ category: CONTENT_CATEGORIES[c]!, score: scores[c]! });
      return found.length > 1 ? found.sort((a, b) => b.score - a.score) : found;
    },
  };
}

/** Reads the bundled lexicon file. */
export function readBundledContentLexicon(): Promise<string> {
  return readFile(CONTENT_LEXICON_URL, "utf8");
}

/**
 * Builds the content-safety detector from a lexicon source (default: the bundled file): reads and
 * parses the JSON, builds the word trie and compiles patterns and idioms.
 */
export async function loadContentSafety(
  source: () => Promise<string> = readBundledContentLexicon,
  thresholds: Record<ContentCategory, number> = defaultThresholds,
): Promise<ContentDetector> {
  const detector = createContentDetector(parseContentLexicon(await source()), thresholds);
  detector.score("warm-up text");
  return detector;
}

let defaultDetector: ContentDetector | undefined;

/**
 * Scores per category for `text` with the bundled lexicon, read on first use. The gateway uses a
 * detector from {@link loadContentSafety} through the loader instead.
 */
export function scoreContent(text: string): Record<ContentCategory, number> {
  defaultDetector ??= createContentDetector(parseContentLexicon(readFileSync(CONTENT_LEXICON_URL, "utf8")));
  return defaultDetector.score(text);
}

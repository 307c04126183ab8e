import { isIP } from "node:net";
import { parsePhoneNumberFromString, type CountryCode } from "libphonenumber-js/max";
import {
  after,
  before,
  CARD_CONTEXT,
  clauseBefore,
  CRYPTO_CONTEXT,
  IP_CONTEXT,
  PASSPORT_CONTEXT,
  PHONE_CONTEXT,
  SSN_CONTEXT,
  type ContextWords,
} from "./pii-context.ts";
import {
  bitcoinBase58Valid,
  bitcoinBech32Valid,
  ethereumChecksumValid,
  ethereumSingleCase,
} from "./pii-crypto.ts";
import { creditCardValid, emailValid, IBAN_LENGTHS, ibanChecksumValid, ssnValid } from "./pii-validators.ts";

/**
 * PII detection: candidate patterns confirmed by validators (Luhn, mod-97, SSN ranges, phone
 * metadata, `net.isIP`, Base58Check, bech32, EIP-55) and scored with context words. Entity type
 * names follow Presidio. Offsets are UTF-16 code unit offsets into the text, `end` exclusive.
 */

export type PiiEntityType =
  | "CREDIT_CARD"
  | "US_SSN"
  | "IBAN_CODE"
  | "EMAIL_ADDRESS"
  | "PHONE_NUMBER"
  | "IP_ADDRESS"
  | "US_PASSPORT"
  | "CRYPTO";

export const PII_ENTITY_TYPES: readonly PiiEntityType[] = [
  "CREDIT_CARD",
  "US_SSN",
  "IBAN_CODE",
  "EMAIL_ADDRESS",
  "PHONE_NUMBER",
  "IP_ADDRESS",
  "US_PASSPORT",
  "CRYPTO",
];

export interface PiiFinding {
  entityType: PiiEntityType;
  start: number;
  end: number;
  /** Confidence in [0, 1]: the validator passed; context words raise it, id words lower it. */
  score: number;
}

export interface PiiOptions {
  /** Findings below this score are dropped. Default {@link DEFAULT_PII_MIN_SCORE}. */
  minScore?: number;
  /** Only these entity types. Default: all. */
  entityTypes?: readonly PiiEntityType[];
}

/** Findings scoring below this are not reported by default. */
export const DEFAULT_PII_MIN_SCORE = 0.5;

export interface PiiDetector {
  detect(text: string, options?: PiiOptions): PiiFinding[];
}

type Recognizer = (text: string, out: PiiFinding[]) => void;

const CONTEXT_BEFORE = 48;
const CONTEXT_AFTER = 32;

function contextScore(text: string, start: number, end: number, words: ContextWords): "positive" | "negative" | "none" {
  const near = before(text, start, CONTEXT_BEFORE);
  const clause = clauseBefore(text, start, CONTEXT_BEFORE);
  if (words.negative?.test(clause)) {
    // The closest cue wins: "card ... order 123" is an order number; "order ... card 4111" a card.
    const neg = lastMatchIndex(clause, words.negative);
    const pos = lastMatchIndex(clause, words.positive);
    if (pos < 0 || neg > pos) return "negative";
  }
  if (words.positive.test(near) || words.positive.test(after(text, end, CONTEXT_AFTER))) return "positive";
  return "none";
}

function lastMatchIndex(text: string, pattern: RegExp): number {
  const global = new RegExp(pattern.source, "g");
  let last = -1;
  for (const m of text.matchAll(global)) last = m.index;
  return last;
}

/**
 * A global pattern's matches, read as `for (let m = firstMatch(P, text); m; m = nextMatch(P, text, m))`:
 * a plain loop rather than a generator, which made an object per recognizer and another per
 * match, on every text the PII guardrail reads.
 */
function firstMatch(pattern: RegExp, text: string): RegExpExecArray | null {
  pattern.lastIndex = 0;
  return pattern.exec(text);
}

function nextMatch(pattern: RegExp, text: string, previous: RegExpExecArray): RegExpExecArray | null {
  if (previous[0].length === 0) pattern.lastIndex++;
  return pattern.exec(text);
}

// --- Credit cards -------------------------------------------------------------------------------

/** 4-4-4-4 with an optional short tail, Amex 4-6-5, Diners 4-6-4, or 13–19 plain digits. */
const CARD_PATTERN =
  /(?<![\w-]|\d[ -])(?:\d{4}([ -])\d{4}\1\d{4}\1\d{4}(?:\1\d{1,3})?|\d{4}([ -])\d{6}\2\d{4,5}|\d{13,19})(?![\w]|[ -]\d{4}\b|-\d|[.,]\d)/g;

const recognizeCards: Recognizer = (text, out) => {
  for (let m = firstMatch(CARD_PATTERN, text); m !== null; m = nextMatch(CARD_PATTERN, text, m)) {
    let value = m[0];
    let valid = creditCardValid(value);
    if (!valid && m[1] !== undefined && /[ -]\d{1,3}$/.test(value)) {
      // "4111 1111 1111 1111 12/27": try without the short tail group.
      value = value.replace(/[ -]\d{1,3}$/, "");
      valid = creditCardValid(value);
    }
    if (!valid) continue;
    const start = m.index;
    const end = start + value.length;
    const grouped = /[ -]/.test(value);
    const ctx = contextScore(text, start, end, CARD_CONTEXT);
    let score = grouped ? 0.8 : 0.55;
    if (ctx === "positive") score += 0.15;
    if (ctx === "negative") score = 0.3;
    out.push({ entityType: "CREDIT_CARD", start, end, score: Math.min(score, 0.99) });
  }
};

// --- US SSN -------------------------------------------------------------------------------------

const SSN_PATTERN = /(?<![\w-]|\d[ -.])(\d{3})([- ]?)(\d{2})\2(\d{4})(?![\w-]|[ .]\d)/g;

const recognizeSsn: Recognizer = (text, out) => {
  for (let m = firstMatch(SSN_PATTERN, text); m !== null; m = nextMatch(SSN_PATTERN, text, m)) {
    if (!ssnValid(m[0])) continue;
    const start = m.index;
    const end = start + m[0].length;
    const ctx = contextScore(text, start, end, SSN_CONTEXT);
    if (ctx === "negative") continue;
    const sep = m[2] ?? "";
    let score: number;
    if (sep === "-") score = ctx === "positive" ? 0.9 : 0.6;
    else if (sep === " ") score = ctx === "positive" ? 0.85 : 0.35;
    else score = ctx === "positive" ? 0.8 : 0.2;
    out.push({ entityType: "US_SSN", start, end, score });
  }
};

// --- IBAN ---------------------------------------------------------------------------------------

const IBAN_PATTERN = /(?<![A-Za-z0-9])([A-Z]{2})(\d{2})((?: ?[A-Z0-9]){8,30})/g;

const recognizeIban: Recognizer = (text, out) => {
  for (let m = firstMatch(IBAN_PATTERN, text); m !== null; m = nextMatch(IBAN_PATTERN, text, m)) {
    const country = m[1] ?? "";
    const expected = IBAN_LENGTHS[country];
    if (expected === undefined) continue;
    // Take exactly the country's length of characters; the cut must fall on a boundary.
    const start = m.index;
    let compact = "";
    let i = start;
    while (i < text.length && compact.length < expected) {
      const ch = text[i] ?? "";
      if (ch === " ") {
        if (text[i + 1] === " " || compact.length < 4) break;
      } else if (/[A-Z0-9]/.test(ch)) {
        compact += ch;
      } else break;
      i++;
    }
    if (compact.length !== expected) continue;
    if (/[A-Za-z0-9]/.test(text[i] ?? "")) continue;
    const grouped = text.slice(start, i);
    // Grouped IBANs are written in fours: a space elsewhere means this is not one.
    if (grouped.includes(" ") && !/^[A-Z0-9]{4}(?: [A-Z0-9]{4})*(?: [A-Z0-9]{1,3})?$/.test(grouped)) continue;
    if (!ibanChecksumValid(compact)) continue;
    out.push({ entityType: "IBAN_CODE", start, end: i, score: 0.95 });
    IBAN_PATTERN.lastIndex = i;
  }
};

// --- E-mail -------------------------------------------------------------------------------------

const EMAIL_PATTERN =
  /(?<![\w.+%-])[A-Za-z0-9._%+-]{1,64}@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w-]|\.[A-Za-z0-9])/g;

const recognizeEmail: Recognizer = (text, out) => {
  for (let m = firstMatch(EMAIL_PATTERN, text); m !== null; m = nextMatch(EMAIL_PATTERN, text, m)) {
    if (!emailValid(m[0])) continue;
    out.push({ entityType: "EMAIL_ADDRESS", start: m.index, end: m.index + m[0].length, score: 0.95 });
  }
};

// --- Phone numbers ------------------------------------------------------------------------------

/** `+CC` then digit groups separated by single spaces, dots, dashes or a parenthesised group. */
const INTL_PHONE_PATTERN = /(?<![\w+])\+\d{1,3}(?:[ .-]?(?:\(\d{1,4}\)|\d{1,12})(?!\d)){1,6}(?![\w])/g;

/** National: `(415) 555-0132`, `415-555-0132`, `415.555.0132`, `020 7946 0958`, `06 12 34 56 78`. */
const NATIONAL_PHONE_PATTERN =
  /(?<![\w+.\/-]|\d[ .-])(?:\(\d{2,5}\)[ .-]?|\d{2,5}[ .-])\d{2,8}(?:[ .-]\d{2,5}){0,3}(?![\w\/-]|[.,:]\d|[ .-]\d)/g;

const US_NATIONAL_SHAPE = /^(?:\(\d{3}\) ?|\d{3}[ .-])\d{3}[ .-]\d{4}$/;
const TRUNK_REGIONS: readonly CountryCode[] = ["GB", "DE", "FR", "IT", "NL", "BE", "AT", "CH", "IE", "AU"];

function phoneValid(candidate: string, region?: CountryCode): boolean {
  const parsed = parsePhoneNumberFromString(candidate, region ? { defaultCountry: region } : undefined);
  return parsed !== undefined && parsed.isValid();
}

const recognizePhone: Recognizer = (text, out) => {
  for (let m = firstMatch(INTL_PHONE_PATTERN, text); m !== null; m = nextMatch(INTL_PHONE_PATTERN, text, m)) {
    // Drop trailing groups until the rest is a valid number ("+44 20 7946 0958 2024").
    let value = m[0];
    while (value.length > 0 && !phoneValid(value)) {
      const cut = value.search(/[ .-]\(?\d+\)?$/);
      if (cut <= 0) {
        value = "";
        break;
      }
      value = value.slice(0, cut);
    }
    const digits = value.replace(/\D/g, "");
    if (digits.length < 8) continue;
    const start = m.index;
    const end = start + value.length;
    const ctx = contextScore(text, start, end, PHONE_CONTEXT);
    const score = ctx === "negative" ? 0.3 : ctx === "positive" ? 0.9 : 0.75;
    out.push({ entityType: "PHONE_NUMBER", start, end, score });
  }
  for (let m = firstMatch(NATIONAL_PHONE_PATTERN, text); m !== null; m = nextMatch(NATIONAL_PHONE_PATTERN, text, m)) {
    const value = m[0];
    if (value.replace(/\D/g, "").length < 9) continue;
    const start = m.index;
    const end = start + value.length;
    const ctx = contextScore(text, start, end, PHONE_CONTEXT);
    if (ctx === "negative") continue;
    if (US_NATIONAL_SHAPE.test(value)) {
      if (!phoneValid(value, "US")) continue;
      out.push({ entityType: "PHONE_NUMBER", start, end, score: ctx === "positive" ? 0.85 : 0.6 });
    } else if (value.startsWith("0") || value.startsWith("(0")) {
      // Trunk-prefix national numbers of other countries: only with a phone word nearby.
      if (ctx !== "positive") continue;
      if (!TRUNK_REGIONS.some((region) => phoneValid(value, region))) continue;
      out.push({ entityType: "PHONE_NUMBER", start, end, score: 0.7 });
    }
  }
};

// --- IP addresses -------------------------------------------------------------------------------

const IPV4_PATTERN = /(?<![\w.:-])(?:\d{1,3}\.){3}\d{1,3}(?![\w-]|\.\d|:\d{1,4}:)/g;
/** A run of hex digits, colons and dots with at least two colons; `net.isIP` decides. */
const IPV6_PATTERN = /(?<![\w:.])(?=[0-9A-Fa-f.]*:[0-9A-Fa-f.]*:)[0-9A-Fa-f:.]{2,45}(?:%[0-9A-Za-z]+)?(?![\w:])/g;
const VERSION_JUST_BEFORE = /(?:\bv|\b(?:v|ver|version|versión|build|release|firmware|fw|rev|revision|patch|sdk)\b[\s:=#]*(?:is|ist|es|est)?\s*)$/;

const recognizeIp: Recognizer = (text, out) => {
  for (let m = firstMatch(IPV4_PATTERN, text); m !== null; m = nextMatch(IPV4_PATTERN, text, m)) {
    const value = m[0];
    if (isIP(value) !== 4) continue;
    const start = m.index;
    const end = start + value.length;
    const near = before(text, start, 24);
    if (VERSION_JUST_BEFORE.test(near)) continue;
    const clause = clauseBefore(text, start, 80);
    const versionCue = IP_CONTEXT.negative?.test(clause) ?? false;
    const ipCue = IP_CONTEXT.positive.test(clause) || IP_CONTEXT.positive.test(after(text, end, CONTEXT_AFTER));
    if (versionCue && !ipCue) continue;
    out.push({ entityType: "IP_ADDRESS", start, end, score: ipCue ? 0.9 : 0.7 });
  }
  for (let m = firstMatch(IPV6_PATTERN, text); m !== null; m = nextMatch(IPV6_PATTERN, text, m)) {
    const zone = m[0].indexOf("%");
    const address = (zone >= 0 ? m[0].slice(0, zone) : m[0]).replace(/\.+$/, "");
    if (isIP(address) !== 6) continue;
    // "::1" or "a::b" in code is too thin: need a full address or four hex digits.
    const hexDigits = address.replace(/[^0-9A-Fa-f]/g, "").length;
    const colons = address.split(":").length - 1;
    if (colons < 7 && hexDigits < 4) continue;
    out.push({ entityType: "IP_ADDRESS", start: m.index, end: m.index + address.length, score: 0.85 });
  }
};

// --- US passport --------------------------------------------------------------------------------

const PASSPORT_PATTERN = /(?<![\w-])(?:[A-Z]\d{8}|\d{9})(?![\w-])/g;

const recognizePassport: Recognizer = (text, out) => {
  for (let m = firstMatch(PASSPORT_PATTERN, text); m !== null; m = nextMatch(PASSPORT_PATTERN, text, m)) {
    const start = m.index;
    const end = start + m[0].length;
    if (!PASSPORT_CONTEXT.positive.test(before(text, start, CONTEXT_BEFORE))) continue;
    out.push({ entityType: "US_PASSPORT", start, end, score: 0.85 });
  }
};

// --- Crypto wallets -----------------------------------------------------------------------------

const BTC_BASE58_PATTERN = /(?<![\w])[13][1-9A-HJ-NP-Za-km-z]{25,34}(?![\w])/g;
const BTC_BECH32_PATTERN = /(?<![\w])(?:bc1[02-9ac-hj-np-z]{11,87}|BC1[02-9AC-HJ-NP-Z]{11,87})(?![\w])/g;
const ETH_PATTERN = /(?<![\w])0x[0-9a-fA-F]{40}(?![\w])/g;

const recognizeCrypto: Recognizer = (text, out) => {
  for (let m = firstMatch(BTC_BASE58_PATTERN, text); m !== null; m = nextMatch(BTC_BASE58_PATTERN, text, m)) {
    if (!bitcoinBase58Valid(m[0])) continue;
    out.push({ entityType: "CRYPTO", start: m.index, end: m.index + m[0].length, score: 0.95 });
  }
  for (let m = firstMatch(BTC_BECH32_PATTERN, text); m !== null; m = nextMatch(BTC_BECH32_PATTERN, text, m)) {
    if (!bitcoinBech32Valid(m[0])) continue;
    out.push({ entityType: "CRYPTO", start: m.index, end: m.index + m[0].length, score: 0.95 });
  }
  for (let m = firstMatch(ETH_PATTERN, text); m !== null; m = nextMatch(ETH_PATTERN, text, m)) {
    const start = m.index;
    const end = start + m[0].length;
    if (ethereumSingleCase(m[0])) {
      // No checksum to check: a bare hash looks the same, so only with wallet words nearby.
      if (!CRYPTO_CONTEXT.positive.test(before(text, start, CONTEXT_BEFORE))) continue;
      out.push({ entityType: "CRYPTO", start, end, score: 0.6 });
    } else if (ethereumChecksumValid(m[0])) {
      out.push({ entityType: "CRYPTO", start, end, score: 0.95 });
    }
  }
};

// --- Detector -----------------------------------------------------------------------------------

const RECOGNIZERS: Readonly<Record<PiiEntityType, Recognizer>> = {
  CREDIT_CARD: recognizeCards,
  US_SSN: recognizeSsn,
  IBAN_CODE: recognizeIban,
  EMAIL_ADDRESS: recognizeEmail,
  PHONE_NUMBER: recognizePhone,
  IP_ADDRESS: recognizeIp,
  US_PASSPORT: recognizePassport,
  CRYPTO: recognizeCrypto,
};

/** Keeps the best of overlapping findings: higher score first, then the longer span. */
function resolveOverlaps(findings: PiiFinding[]): PiiFinding[] {
  const ranked = [...findings].sort(
    (a, b) => b.score - a.score || b.end - b.start - (a.end - a.start) || a.start - b.start,
  );
  // Kept spans never overlap, so marking the code units they cover answers "does this one overlap
  // a kept one" in the length of its own span: linear, where comparing with every kept finding
  // was quadratic in a text full of addresses.
  const taken = new Uint8Array(findings.reduce((end, f) => Math.max(end, f.end), 0));
  const kept: PiiFinding[] = [];
  for (const f of ranked) {
    if (taken.subarray(f.start, f.end).includes(1)) continue;
    taken.fill(1, f.start, f.end);
    kept.push(f);
  }
  return kept.sort((a, b) => a.start - b.start || a.end - b.end);
}

/** A cheap test that lets texts without a digit or `@` skip every recognizer. */
const ANY_CANDIDATE = /[\d@]/;

export function createPiiDetector(): PiiDetector {
  return {
    detect(text, options = {}) {
      if (!ANY_CANDIDATE.test(text)) return [];
      const minScore = options.minScore ?? DEFAULT_PII_MIN_SCORE;
      const types = options.entityTypes ?? PII_ENTITY_TYPES;
      const raw: PiiFinding[] = [];
      for (const type of types) RECOGNIZERS[type](text, raw);
      // Most texts with a digit hold no PII: nothing to rank, mark and copy.
      if (raw.length === 0) return raw;
      // Overlaps are resolved before the score cut, so that a weak SSN reading of a passport
      // number does not survive next to the stronger reading.
      return resolveOverlaps(raw)
        .filter((f) => f.score >= minScore)
        .map((f) => ({ ...f, score: Math.round(f.score * 100) / 100 }));
    },
  };
}

/**
 * Builds the PII detector: compiles the patterns and runs each recognizer once on a warm-up text,
 * which loads the phone-number metadata, so that the first real request pays no start-up cost.
 */
export async function loadPii(): Promise<PiiDetector> {
  await Promise.resolve();
  const detector = createPiiDetector();
  detector.detect("Call +1 415 555 0132 or 415-555-0132, mail a@example.org, card 4111 1111 1111 1111, IP 192.0.2.1.");
  return detector;
}

let defaultDetector: PiiDetector | undefined;

/**
 * PII findings in `text` with the default detector (created on first use), sorted by offset.
 * The gateway uses a detector from {@link loadPii} through the loader instead.
 */
export function detectPii(text: string, options?: PiiOptions): PiiFinding[] {
  defaultDetector ??= createPiiDetector();
  return defaultDetector.detect(text, options);
}

import { readFile } from "node:fs/promises";
import { streamSafe } from "../detectors/normalize.ts";

/**
 * A reader for Hugging Face `tokenizer.json` files of BERT-family models (model type `WordPiece`:
 * BERT, DistilBERT, MiniLM, ELECTRA and their fine-tunes for classification). No network, no
 * dependency. It implements what those files use: the BERT normalizer (clean text, Chinese
 * characters split off, optional lower-casing and accent stripping), the BERT pre-tokenizer
 * (whitespace and punctuation), greedy longest-match WordPiece with the `##` continuation prefix,
 * and the `[CLS] … [SEP]` template, truncated to `maxLength`.
 *
 * Other model types (BPE for RoBERTa/GPT-2, Unigram for DeBERTa-v3/XLM-R) are refused with a
 * clear error, so that an operator learns at start-up that the plug-in cannot serve that model.
 */

export interface Encoding {
  inputIds: number[];
  attentionMask: number[];
  tokenTypeIds: number[];
}

export interface WordPieceTokenizer {
  encode(text: string, maxLength?: number): Encoding;
  tokenize(text: string): string[];
}

interface TokenizerJson {
  model?: { type?: string; vocab?: Record<string, number>; unk_token?: string; continuing_subword_prefix?: string; max_input_chars_per_word?: number };
  normalizer?: { type?: string; lowercase?: boolean; strip_accents?: boolean | null; clean_text?: boolean; handle_chinese_chars?: boolean } | null;
  added_tokens?: { id: number; content: string }[];
}

export class TokenizerFormatError extends Error {
  override name = "TokenizerFormatError";
}

function isPunctuation(ch: string): boolean {
  const cp = ch.codePointAt(0) ?? 0;
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126)) return true;
  return /\p{P}/u.test(ch);
}

function isChinese(cp: number): boolean {
  return (
    (cp >= 0x4e00 && cp <= 0x9fff) ||
    (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0x20000 && cp <= 0x2a6df) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0x2f800 && cp <= 0x2fa1f)
  );
}

/** Builds a tokenizer from the text of a `tokenizer.json`. */
export function parseWordPieceTokenizer(json: string): WordPieceTokenizer {
  let file: TokenizerJson;
  try {
    file = JSON.parse(json) as TokenizerJson;
  } catch (error) {
    throw new TokenizerFormatError(`tokenizer.json is not JSON: ${(error as Error).message}`);
  }
  const model = file.model;
  if (!model || model.type !== "WordPiece") {
    throw new TokenizerFormatError(`tokenizer model type ${String(model?.type)} is not supported (WordPiece only)`);
  }
  const vocab = new Map(Object.entries(model.vocab ?? {}));
  for (const added of file.added_tokens ?? []) vocab.set(added.content, added.id);
  const unkToken = model.unk_token ?? "[UNK]";
  const prefix = model.continuing_subword_prefix ?? "##";
  const maxChars = model.max_input_chars_per_word ?? 100;
  const id = (token: string): number => {
    const v = vocab.get(token);
    if (v === undefined) throw new TokenizerFormatError(`vocabulary has no ${token}`);
    return v;
  };
  const unk = id(unkToken);
  const cls = id("[CLS]");
  const sep = id("[SEP]");
  const norm = file.normalizer ?? {};
  const lowercase = norm.lowercase ?? true;
  const stripAccents = norm.strip_accents ?? lowercase;

  const normalize = (text: string): string => {
    let out = "";
    for (const ch of text) {
      const cp = ch.codePointAt(0) ?? 0;
      if (cp === 0 || cp === 0xfffd || (/\p{Cc}/u.test(ch) && !/\s/.test(ch))) continue;
      if (/\s/.test(ch)) out += " ";
      else if (isChinese(cp)) out += ` ${ch} `;
      else out += ch;
    }
    if (lowercase) out = out.toLowerCase();
    // Stream-safe first: NFD sorts a long run of marks in quadratic time (see normalize.ts).
    if (stripAccents) out = streamSafe(out).normalize("NFD").replace(/\p{Mn}/gu, "");
    return out;
  };

  const preTokenize = (text: string): string[] => {
    const words: string[] = [];
    for (const chunk of text.split(" ")) {
      let current = "";
      for (const ch of chunk) {
        if (isPunctuation(ch)) {
          if (current) words.push(current);
          words.push(ch);
          current = "";
        } else current += ch;
      }
      if (current) words.push(current);
    }
    return words;
  };

  const wordPiece = (word: string): string[] => {
    const chars = [...word];
    if (chars.length > maxChars) return [unkToken];
    const pieces: string[] = [];
    let start = 0;
    while (start < chars.length) {
      let end = chars.length;
      let found: string | undefined;
      while (start < end) {
        const piece = (start > 0 ? prefix : "") + chars.slice(start, end).join("");
        if (vocab.has(piece)) {
          found = piece;
          break;
        }
        end--;
      }
      if (found === undefined) return [unkToken];
      pieces.push(found);
      start = end;
    }
    return pieces;
  };

  const tokenize = (text: string): string[] => preTokenize(normalize(text)).flatMap(wordPiece);

  return {
    tokenize,
    encode(text, maxLength = 512) {
      const ids = tokenize(text).map((t) => vocab.get(t) ?? unk);
      const body = ids.slice(0, Math.max(0, maxLength - 2));
      const inputIds = [cls, ...body, sep];
      return {
        inputIds,
        attentionMask: inputIds.map(() => 1),
        tokenTypeIds: inputIds.map(() => 0),
      };
    },
  };
}

export async function loadWordPieceTokenizer(path: string): Promise<WordPieceTokenizer> {
  return parseWordPieceTokenizer(await readFile(path, "utf8"));
}

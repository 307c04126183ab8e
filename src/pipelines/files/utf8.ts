import { Buffer, isUtf8 } from "node:buffer";
import { invalidArgument } from "../../platform/errors.ts";

const EMPTY = new Uint8Array(0);
const NEWLINE = 0x0a;

/**
 * The length of the longest prefix of `bytes` that does not end inside a character: a chunk of a
 * stream may stop in the middle of a multi-byte sequence, whose rest comes with the next chunk.
 */
export function wholeCharsLength(bytes: Uint8Array): number {
  const n = bytes.length;
  for (let back = 1; back <= 3 && back <= n; back++) {
    const byte = bytes[n - back]!;
    if ((byte & 0xc0) === 0x80) continue; // a continuation byte: look further back for its lead
    const length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return length > back ? n - back : n;
  }
  return n;
}

/**
 * The offset of the first byte that does not start a well-formed UTF-8 sequence (overlong forms,
 * surrogates and code points past U+10FFFF included), or -1. Only run once decoding has failed, to
 * say where.
 */
function firstInvalidUtf8(bytes: Uint8Array): number {
  const n = bytes.length;
  let i = 0;
  while (i < n) {
    const lead = bytes[i]!;
    if (lead < 0x80) {
      i++;
      continue;
    }
    const more = lead >= 0xc2 && lead <= 0xdf ? 1 : lead >= 0xe0 && lead <= 0xef ? 2 : lead >= 0xf0 && lead <= 0xf4 ? 3 : 0;
    if (more === 0 || i + more >= n) return i;
    const second = bytes[i + 1]!;
    if (lead === 0xe0 && second < 0xa0) return i; // overlong
    if (lead === 0xed && second > 0x9f) return i; // a surrogate
    if (lead === 0xf0 && second < 0x90) return i; // overlong
    if (lead === 0xf4 && second > 0x8f) return i; // past U+10FFFF
    for (let k = 1; k <= more; k++) {
      if ((bytes[i + k]! & 0xc0) !== 0x80) return i;
    }
    i += more + 1;
  }
  return -1;
}

/** How many line feeds `bytes` holds before `end`. */
function countNewlines(bytes: Uint8Array, end = bytes.length): number {
  let count = 0;
  for (let i = bytes.indexOf(NEWLINE); i !== -1 && i < end; i = bytes.indexOf(NEWLINE, i + 1)) count++;
  return count;
}

/**
 * The bytes of a text file, passed on unchanged once they are known to be UTF-8, each chunk cut
 * on a character boundary (the cut-off end goes with the next chunk). Undecodable bytes are a 400
 * naming their line. Linear: each byte is checked once and copied at most once.
 */
export async function* validUtf8(source: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  let carry: Uint8Array = EMPTY;
  let lines = 0;
  for await (const chunk of source) {
    const data = carry.length === 0 ? chunk : Buffer.concat([carry, chunk]);
    const whole = data.subarray(0, wholeCharsLength(data));
    if (!isUtf8(whole)) {
      const at = firstInvalidUtf8(whole);
      throw invalidArgument(`Line ${lines + countNewlines(whole, at) + 1} of the file is not valid UTF-8`);
    }
    lines += countNewlines(whole);
    carry = new Uint8Array(data.subarray(whole.length)); // a copy of at most 3 bytes: the chunk may be reused
    if (whole.length > 0) yield whole;
  }
  if (carry.length > 0) throw invalidArgument(`Line ${lines + 1} of the file is not valid UTF-8: the file ends inside a character`);
}

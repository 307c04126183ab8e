import { Buffer, isUtf8 } from "node:buffer";
import { wholeCharsLength } from "./utf8.ts";

export type DataFileFormat = "csv" | "jsonl" | "arrow";

const byExtension: Record<string, DataFileFormat> = {
  csv: "csv",
  jsonl: "jsonl",
  ndjson: "jsonl",
  "json-lines": "jsonl",
  jsonlines: "jsonl",
  arrow: "arrow",
  arrows: "arrow",
  feather: "arrow",
  ipc: "arrow",
};

/** How much of the head the text checks read: enough to tell, little enough to stay cheap. */
const SNIFF_BYTES = 512;

/**
 * Arrow IPC by its first bytes: the file format's magic "ARROW1" and padding, or the stream
 * format's first message, which starts with the continuation marker 0xFFFFFFFF. Text cannot
 * start either way: it holds no NUL, and 0xFF is never UTF-8.
 */
function isArrow(head: Uint8Array): boolean {
  if (head.length >= 8 && Buffer.from(head.buffer, head.byteOffset, 8).equals(Buffer.from("ARROW1\0\0", "latin1"))) return true;
  return head.length >= 4 && head[0] === 0xff && head[1] === 0xff && head[2] === 0xff && head[3] === 0xff;
}

/** By the text itself: JSON Lines starts with "{"; other UTF-8 text without NUL is CSV. */
function textFormat(head: Uint8Array): DataFileFormat | undefined {
  const sample = head.subarray(0, SNIFF_BYTES);
  const text = sample.subarray(0, wholeCharsLength(sample));
  if (text.includes(0) || !isUtf8(text)) return undefined;
  let i = text[0] === 0xef && text[1] === 0xbb && text[2] === 0xbf ? 3 : 0; // a BOM
  while (i < text.length && (text[i] === 0x20 || text[i] === 0x09 || text[i] === 0x0a || text[i] === 0x0d)) i++;
  if (i === text.length) return undefined; // nothing to tell by
  if (text[i] === 0x7b) return "jsonl";
  // A JSON document (an array of rows) is not JSON Lines, and not CSV either.
  if (text[i] === 0x5b) return undefined;
  return "csv";
}

/**
 * The format of an uploaded file. The bytes decide first when they are Arrow IPC; then the object
 * name's extension (.csv; .jsonl, .ndjson, .json-lines; .arrow, .arrows, .feather, .ipc); without
 * one of those, the text itself. A name in .arrow over text is read as the text: the Python SDK
 * uploads a CSV file under the .arrow name it asked a URL for. `head` is the first bytes (at least
 * 8 tell Arrow; the first line tells text). Undefined when nothing tells.
 */
export function dataFileFormat(objectName: string, head: Uint8Array): DataFileFormat | undefined {
  if (isArrow(head)) return "arrow";
  const base = objectName.slice(objectName.lastIndexOf("/") + 1);
  const dot = base.lastIndexOf(".");
  const named = dot > 0 ? byExtension[base.slice(dot + 1).toLowerCase()] : undefined;
  if (named === "csv" || named === "jsonl") return named;
  if (named === "arrow") {
    // An Arrow stream from before the continuation marker (pyarrow < 0.15) starts with its
    // metadata's length, whose high bytes are zero: not text.
    return head.subarray(0, 8).includes(0) ? "arrow" : (textFormat(head) ?? "arrow");
  }
  return textFormat(head);
}

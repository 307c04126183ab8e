/**
 * Behaviour directives carried in a model name: `base|key=value|key=value`.
 *
 * Values are escaped so that any text survives: `%` → `%25`, `|` → `%7C`, `=` → `%3D` (nothing else
 * is touched, so `text=Hello world` stays readable). Parsing undoes it with decodeURIComponent.
 */

export interface FakeDirectives {
  /** Answer this status (400 to 599) with an error body in the provider's own format. */
  status?: number;
  /** The error message; default `Fake <kind> error <status>`. */
  message?: string;
  /** The error `type`; default derived from the status, the provider's way. */
  errorType?: string;
  /** OpenAI/Azure only: the error `code`; default null. */
  errorCode?: string;
  /** Seconds, sent as the `Retry-After` header of the error. */
  retryAfter?: number;
  /** Wait this long before sending response headers (also before an error or a hang-up). */
  delayMs?: number;
  /** Text delta events in a stream (for a tool call: pieces of its arguments); default 3. */
  events?: number;
  /** In a stream, destroy the socket after this many SSE events (all event types count; in chat completions every chunk and `data: [DONE]`). */
  cutAfter?: number;
  /** In a stream, after this many SSE events send nothing more and keep the socket open until close(). */
  stallAfter?: number;
  /** In a stream, the second SSE event (chat completions: the second chunk) carries data that is not valid JSON. */
  malformedSse?: boolean;
  /** Destroy the socket without answering. */
  hangUp?: boolean;
  /** Answer with bytes that are not (valid) HTTP, then close: see WireFault. */
  wire?: WireFault;
  /** Usage figures; default 11 / 7. */
  inputTokens?: number;
  outputTokens?: number;
  /** The generated text; default `Hello from <kind>` (see tools.ts for tool results and images). */
  text?: string;
  /** The arguments of the tool call the fake makes when a request declares tools: JSON text of an object; default `{"city":"Paris"}`. */
  toolArgs?: string;
}

/**
 * Bytes a broken provider or a middlebox might send instead of an HTTP answer:
 * - `garbage`: `garbage\r\n\r\n`, no status line at all;
 * - `random`: 256 bytes of noise (the same for the same request);
 * - `half-header`: a status line and half a header, then the connection closes;
 * - `bad-header`: a header value with a control character;
 * - `bad-status`: a status code of six digits;
 * - `header-overflow`: 64 KiB of one header, past any client's header cap;
 * - `bad-chunk`: a valid 200 head (SSE for a stream, else JSON), the first event or `{`, then a
 *   chunk size that is not hexadecimal: the body breaks after the headers.
 */
export type WireFault = "garbage" | "random" | "half-header" | "bad-header" | "bad-status" | "header-overflow" | "bad-chunk";
export const WIRE_FAULTS: readonly WireFault[] = ["garbage", "random", "half-header", "bad-header", "bad-status", "header-overflow", "bad-chunk"];

type NumberKey = "status" | "retryAfter" | "delayMs" | "events" | "cutAfter" | "stallAfter" | "inputTokens" | "outputTokens";
type StringKey = "message" | "errorType" | "errorCode" | "text" | "toolArgs";
type BooleanKey = "malformedSse" | "hangUp";

/** The canonical order in which fakeModel writes directives. */
const ORDER: ReadonlyArray<keyof FakeDirectives> = [
  "status",
  "message",
  "errorType",
  "errorCode",
  "retryAfter",
  "delayMs",
  "events",
  "cutAfter",
  "stallAfter",
  "malformedSse",
  "hangUp",
  "wire",
  "inputTokens",
  "outputTokens",
  "text",
  "toolArgs",
];

const NUMBER_KEYS: ReadonlySet<string> = new Set<NumberKey>([
  "status",
  "retryAfter",
  "delayMs",
  "events",
  "cutAfter",
  "stallAfter",
  "inputTokens",
  "outputTokens",
]);
const STRING_KEYS: ReadonlySet<string> = new Set<StringKey>(["message", "errorType", "errorCode", "text", "toolArgs"]);
const BOOLEAN_KEYS: ReadonlySet<string> = new Set<BooleanKey>(["malformedSse", "hangUp"]);

/** Upper bounds, so that a typo cannot make a fake wait for a day or write a gigabyte. */
const MAX: Record<NumberKey, number> = {
  status: 599,
  retryAfter: 86_400,
  delayMs: 600_000,
  events: 10_000,
  cutAfter: 1_000_000,
  stallAfter: 1_000_000,
  // Large on purpose: a provider that reports absurd usage is a case the gateway must survive.
  inputTokens: Number.MAX_SAFE_INTEGER,
  outputTokens: Number.MAX_SAFE_INTEGER,
};

function escapeValue(value: string): string {
  return value.replace(/%/g, "%25").replace(/\|/g, "%7C").replace(/=/g, "%3D");
}

/** Builds a model name that carries behaviour directives. */
export function fakeModel(base: string, directives: FakeDirectives = {}): string {
  if (base.includes("|")) throw new Error(`fakeModel: the base model name must not contain '|': ${base}`);
  let name = base;
  for (const key of ORDER) {
    const value = directives[key];
    if (value === undefined) continue;
    if (typeof value === "boolean") {
      if (value) name += `|${key}=true`;
      continue;
    }
    name += `|${key}=${escapeValue(String(value))}`;
  }
  return name;
}

export type ParsedModel = { ok: true; base: string; directives: FakeDirectives } | { ok: false; message: string };

/** Reads the directives of a model name; a name without `|` has none. */
export function parseFakeModel(model: string): ParsedModel {
  const [base = "", ...parts] = model.split("|");
  const directives: FakeDirectives = {};
  for (const part of parts) {
    const eq = part.indexOf("=");
    const key = eq === -1 ? part : part.slice(0, eq);
    let value: string;
    try {
      value = eq === -1 ? "" : decodeURIComponent(part.slice(eq + 1));
    } catch {
      return { ok: false, message: `Fake directive '${key}' has a badly escaped value.` };
    }
    if (NUMBER_KEYS.has(key)) {
      const numberKey = key as NumberKey;
      if (!/^\d+$/.test(value)) return { ok: false, message: `Fake directive '${key}' needs a non-negative integer, got '${value}'.` };
      const n = Number(value);
      if (n > MAX[numberKey]) return { ok: false, message: `Fake directive '${key}' is at most ${MAX[numberKey]}.` };
      if (numberKey === "status" && n < 400) return { ok: false, message: `Fake directive 'status' must be an error status (400 to 599).` };
      directives[numberKey] = n;
    } else if (STRING_KEYS.has(key)) {
      if (key === "toolArgs" && !isJsonObjectText(value)) return { ok: false, message: `Fake directive 'toolArgs' needs the JSON text of an object, got '${value}'.` };
      directives[key as StringKey] = value;
    } else if (key === "wire") {
      const fault = WIRE_FAULTS.find((name) => name === value);
      if (fault === undefined) return { ok: false, message: `Fake directive 'wire' is one of ${WIRE_FAULTS.join(", ")}, got '${value}'.` };
      directives.wire = fault;
    } else if (BOOLEAN_KEYS.has(key)) {
      if (value === "" || value === "true" || value === "1") directives[key as BooleanKey] = true;
      else if (value === "false" || value === "0") directives[key as BooleanKey] = false;
      else return { ok: false, message: `Fake directive '${key}' needs true or false, got '${value}'.` };
    } else {
      return { ok: false, message: `Unknown fake directive '${key}' in model '${model}'.` };
    }
  }
  return { ok: true, base, directives };
}

function isJsonObjectText(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}

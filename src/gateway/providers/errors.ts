import { Buffer } from "node:buffer";
import { STATUS_CODES } from "node:http";
import { errors as undiciErrors } from "undici";

/**
 * Upstream failures, typed once at the provider edge (as openai-node does with
 * APIConnectionError / APIConnectionTimeoutError), so the data plane never looks at undici's
 * codes. The messages here are for logs; the texts a caller sees live in dataplane/errors.ts.
 */

/** Before the response headers: the call failed. While reading the body: the response broke off. */
export type UpstreamPhase = "request" | "body";

abstract class UpstreamError extends Error {
  /** The undici or OS code of the cause (UND_ERR_HEADERS_TIMEOUT, ECONNRESET, …). */
  readonly code: string;
  readonly phase: UpstreamPhase;

  constructor(message: string, code: string, phase: UpstreamPhase, cause: unknown) {
    super(`${message} (${code})`, { cause });
    this.code = code;
    this.phase = phase;
  }
}

/** The provider did not connect or did not send its headers in time: the data plane answers 504. */
export class UpstreamTimeoutError extends UpstreamError {
  override readonly name = "UpstreamTimeoutError";
  constructor(code: string, cause?: unknown) {
    super("upstream did not answer in time", code, "request", cause);
  }
}

/** The provider went silent mid-body for longer than bodyTimeoutMs. */
export class UpstreamBodyTimeoutError extends UpstreamError {
  override readonly name = "UpstreamBodyTimeoutError";
  constructor(code: string, cause?: unknown) {
    super("upstream stopped sending its body", code, "body", cause);
  }
}

/** The connection failed, was refused or was dropped: the data plane answers 502. */
export class UpstreamConnectionError extends UpstreamError {
  override readonly name = "UpstreamConnectionError";
  constructor(code: string, phase: UpstreamPhase, cause?: unknown) {
    super(phase === "request" ? "upstream connection failed" : "upstream connection dropped mid-body", code, phase, cause);
  }
}

export type TypedUpstreamError = UpstreamTimeoutError | UpstreamBodyTimeoutError | UpstreamConnectionError;

export function isUpstreamError(err: unknown): err is TypedUpstreamError {
  return err instanceof UpstreamError;
}

const timeoutCodes = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_CONNECT_TIMEOUT", "ETIMEDOUT"]);

/**
 * Undici codes that mean the request we built was wrong (a bug of ours, answered 500), not that
 * the provider failed. Every other undici error is the provider's transport failing.
 */
const ownFaultCodes = new Set(["UND_ERR_INVALID_ARG", "UND_ERR_INVALID_RETURN_VALUE", "UND_ERR_NOT_SUPPORTED"]);

/**
 * TLS failures: Node's own (ERR_TLS_*), OpenSSL's (ERR_SSL_*, EPROTO) and OpenSSL's certificate
 * verification codes (CERT_HAS_EXPIRED, DEPTH_ZERO_SELF_SIGNED_CERT, UNABLE_TO_VERIFY_LEAF_SIGNATURE…).
 */
const tlsCode = /^(ERR_TLS_|ERR_SSL_|EPROTO$|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH$|INVALID_CA$|INVALID_PURPOSE$)/;

function codeOf(err: unknown): string | undefined {
  if (typeof err !== "object" || err === null || !("code" in err)) return undefined;
  return typeof err.code === "string" ? err.code : undefined;
}

/** Socket and DNS failures by their OS code, for errors that come without the syscall Node usually adds. */
const networkCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "EHOSTUNREACH",
  "EHOSTDOWN",
  "ENETUNREACH",
  "ENETDOWN",
  "EADDRNOTAVAIL",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EAI_FAIL",
]);

/** A socket or DNS failure from the operating system: Node marks those with a syscall. */
function isSystemError(err: unknown, code: string | undefined): boolean {
  if (code !== undefined && networkCodes.has(code)) return true;
  return err instanceof Error && "syscall" in err && typeof err.syscall === "string";
}

/**
 * Maps an undici, socket or TLS error to its typed upstream error; undefined for anything else
 * (a bug, an argument undici refused), which the caller rethrows unchanged. The caller's own abort
 * is not passed here: send() and the body check their signal first. `phase` says whether the
 * response headers had arrived; a body timeout is a body failure whatever the phase.
 *
 * Every transport failure lands in one of two kinds: a timeout (504) or a connection that failed
 * or carried something that is not HTTP (502): llhttp's parse errors, undici's socket, size and
 * protocol errors, the OS's socket and DNS errors, and TLS errors.
 */
export function classifyUpstreamError(err: unknown, phase: UpstreamPhase = "request"): TypedUpstreamError | undefined {
  if (isUpstreamError(err)) return err;
  const code = codeOf(err);
  if (code === "UND_ERR_BODY_TIMEOUT") return new UpstreamBodyTimeoutError(code, err);
  if (code !== undefined && timeoutCodes.has(code)) {
    return phase === "body" ? new UpstreamBodyTimeoutError(code, err) : new UpstreamTimeoutError(code, err);
  }
  // Matched by type too: undici 8 leaves their HPE_* code unset.
  if (err instanceof undiciErrors.HTTPParserError || code?.startsWith("HPE_")) return new UpstreamConnectionError(code ?? "HPE_INVALID", phase, err);
  if (err instanceof undiciErrors.UndiciError) {
    return ownFaultCodes.has(err.code) ? undefined : new UpstreamConnectionError(err.code, phase, err);
  }
  if (isSystemError(err, code) || (code !== undefined && tlsCode.test(code))) {
    return new UpstreamConnectionError(code ?? "ESYSTEM", phase, err);
  }
  // What undici's socket errors say when they come without their class (another undici copy).
  if (err instanceof Error && err.message === "other side closed") return new UpstreamConnectionError("UND_ERR_SOCKET", phase, err);
  return undefined;
}

/** Longest provider message kept; an HTML error page from a proxy should not become a novel. */
export const PROVIDER_MESSAGE_MAX_CHARS = 1000;

/** Bytes of a provider's error body read at most; the rest is dropped with the connection. */
export const PROVIDER_ERROR_BODY_MAX_BYTES = 64 * 1024;

function messageField(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const record = value as Record<string, unknown>;
  const error = record.error;
  // Anthropic: {type:"error", error:{type, message}}; OpenAI and Azure: {error:{message, type, param, code}}.
  if (typeof error === "object" && error !== null) {
    const message = (error as Record<string, unknown>).message;
    if (typeof message === "string" && message.trim() !== "") return message;
  }
  if (typeof error === "string" && error.trim() !== "") return error;
  if (typeof record.message === "string" && record.message.trim() !== "") return record.message;
  return undefined;
}

function cap(text: string): string {
  if (text.length <= PROVIDER_MESSAGE_MAX_CHARS) return text;
  let end = PROVIDER_MESSAGE_MAX_CHARS;
  // Never cut a surrogate pair in half.
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}…`;
}

/**
 * The provider's own message from its error body. Its error `code` and its Retry-After are
 * deliberately not kept (spec: "Provider errors").
 */
export function readProviderError(status: number, bodyText: string): { message: string } {
  const text = bodyText.trim();
  if (text.startsWith("{")) {
    try {
      const message = messageField(JSON.parse(text));
      if (message !== undefined) return { message: cap(message.trim()) };
    } catch {
      // Not JSON after all: the text itself is the message.
    }
  }
  if (text !== "") return { message: cap(text) };
  return { message: STATUS_CODES[status] ?? `HTTP ${status}` };
}

/** Reads a provider's error body as text, up to `maxBytes`; stopping early drops the connection. */
export async function readProviderErrorBody(
  body: AsyncIterable<Buffer>,
  maxBytes: number = PROVIDER_ERROR_BODY_MAX_BYTES,
): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    length += chunk.length;
    if (length >= maxBytes) break;
  }
  // A cut inside a multi-byte character decodes to U+FFFD, which is harmless in a message.
  return Buffer.concat(chunks, length).subarray(0, maxBytes).toString("utf8");
}

import { promisify } from "node:util";
import { gzip } from "node:zlib";
import { OTLPExporterError, type ExportResponse, type IExporterTransport } from "@opentelemetry/otlp-exporter-base";
import type { convertLegacyHttpOptions } from "@opentelemetry/otlp-exporter-base/node-http";
import { Pool } from "undici";
import { dispatchRequest } from "./dispatch.ts";
import { BodyTooLarge } from "./http.ts";

/** The exporter's settings, as the SDK merges them from Warden's and the OTEL_EXPORTER_OTLP_* variables. */
export type OtlpHttpOptions = ReturnType<typeof convertLegacyHttpOptions>;

/** As the SDK's transport: an answer longer than this is not read (the export fails). */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;
/** The SDK's retry schedule: up to five more attempts, 1 s apart and growing by half, ±20 %, at most 5 s, within the export's deadline. */
const RETRIES = 5;
const FIRST_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 5_000;
/** What the SDK's transport retries: statuses, and network errors by code (undici's own among them). */
const RETRIED_STATUSES = new Set([429, 502, 503, 504]);
const RETRIED_CODES = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "EPIPE",
  "ETIMEDOUT",
  "EAI_AGAIN",
  "ENOTFOUND",
  "ENETUNREACH",
  "EHOSTUNREACH",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
]);

const gzipped = promisify(gzip);

/**
 * Spans posted to the collector through undici, as the gateway's provider calls are, in place of
 * the SDK's node:http transport; the SDK's exporter still batches, bounds and counts. Why: the
 * SDK's transport pipes a stream into a node:http client request, and those objects go through
 * Node's stream and socket functions that the gateway's own traffic runs: a few exports in, V8
 * had made those functions megamorphic for every request. A gateway tracing one request in ten
 * ran about 8,000 more instructions a call for it, and one with the access log and metrics on too
 * about 70,000 (docs/performance.md, "Instructions a call, whole gateways"). Kept from the SDK's
 * transport: what it retries, and how (RETRIES above), a Retry-After, the 4 MB bound on an
 * answer, gzip when OTEL_EXPORTER_OTLP_COMPRESSION asks for it.
 */
export class OtlpHttpTransport implements IExporterTransport {
  readonly #options: OtlpHttpOptions;
  readonly #url: URL;
  readonly #pool: Pool;

  constructor(options: OtlpHttpOptions) {
    this.#options = options;
    this.#url = new URL(options.url);
    this.#pool = new Pool(this.#url.origin);
  }

  async send(data: Uint8Array, timeoutMillis: number): Promise<ExportResponse> {
    const deadline = Date.now() + timeoutMillis;
    const headers: Record<string, string> = { ...(await this.#options.headers()), "user-agent": "warden" };
    let body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    if (this.#options.compression === "gzip") {
      body = await gzipped(body);
      headers["content-encoding"] = "gzip";
    }
    let backoff = FIRST_BACKOFF_MS;
    let result = await this.#post(body, headers, timeoutMillis);
    for (let retry = 0; retry < RETRIES && result.status === "retryable"; retry++) {
      const wait = result.retryInMillis ?? Math.min(backoff * (0.8 + Math.random() * 0.4), MAX_BACKOFF_MS);
      backoff *= 1.5;
      const left = deadline - Date.now();
      if (wait > left) break;
      await new Promise((resolve) => setTimeout(resolve, wait));
      result = await this.#post(body, headers, deadline - Date.now());
    }
    return result;
  }

  shutdown(): void {
    this.#pool.close().catch(() => undefined);
  }

  async #post(body: Buffer, headers: Record<string, string>, timeoutMillis: number): Promise<ExportResponse> {
    const signal = AbortSignal.timeout(Math.max(1, timeoutMillis));
    try {
      const answer = await dispatchRequest(this.#pool, { method: "POST", path: `${this.#url.pathname}${this.#url.search}`, headers, body }, signal);
      const data = await answer.bytes(MAX_ANSWER_BYTES).catch((err: unknown) => {
        if (err instanceof BodyTooLarge) return undefined;
        throw err;
      });
      if (data === undefined) return { status: "failure", error: new Error(`OTLP export response body exceeded size limit of ${MAX_ANSWER_BYTES} bytes`) };
      const status = answer.statusCode;
      if (status <= 299) return { status: "success", data };
      if (RETRIED_STATUSES.has(status)) return { status: "retryable", retryInMillis: retryAfterMs(answer.headers["retry-after"]) };
      return { status: "failure", error: new OTLPExporterError(`the collector answered ${status}`, status, data.toString()) };
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      if (signal.aborted) return { status: "retryable", error: new Error("Request timed out") };
      const code = (error as { code?: unknown }).code;
      return typeof code === "string" && RETRIED_CODES.has(code) ? { status: "retryable", error } : { status: "failure", error };
    }
  }
}

/** A Retry-After in seconds or as a date, in milliseconds, as the SDK reads it; undefined when absent. */
function retryAfterMs(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined) return undefined;
  const seconds = Number.parseInt(value, 10);
  if (Number.isInteger(seconds)) return Math.max(0, seconds * 1_000);
  const delay = new Date(value).getTime() - Date.now();
  return Number.isNaN(delay) ? undefined : Math.max(0, delay);
}

import type { StopSignal } from "../../platform/stop.ts";
import { Pool } from "undici";
import { dispatchRequest, type DispatchedAnswer } from "../../platform/dispatch.ts";
import type { TraceHeaders } from "../../platform/tracing.ts";
import type { ProviderConfig, ProviderKind } from "../config/types.ts";
import { classifyUpstreamError, type UpstreamPhase } from "./errors.ts";

export interface UpstreamCall {
  /** Below the base URL's own path, as the endpoint's spec gives it (`/v1/messages`); Azure's `/openai` is added here. */
  path: string;
  /** The request body, already rewritten (upstream model name and so on). */
  body: Buffer;
  /** The caller's headers; only anthropic-version and anthropic-beta are read. A Headers fits. */
  clientHeaders: Pick<Headers, "get">;
  /** W3C traceparent and tracestate, when the call is traced. */
  traceHeaders?: TraceHeaders;
  /** The caller's; aborting it rejects send() or ends the body with the signal's reason, untyped. */
  signal: StopSignal;
}

/**
 * The provider's answer. Its body is read once, one way: chunk by chunk (`body`, for streams and
 * error bodies) or whole (`bytes()`). Errors while reading it arrive already typed
 * (UpstreamBodyTimeoutError, …).
 */
export interface UpstreamResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: AsyncIterable<Buffer>;
  bytes(): Promise<Buffer>;
}

class UndiciResponse implements UpstreamResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly #answer: DispatchedAnswer;
  readonly #signal: StopSignal;

  constructor(answer: DispatchedAnswer, signal: StopSignal) {
    this.status = answer.statusCode;
    this.headers = answer.headers;
    this.#answer = answer;
    this.#signal = signal;
  }

  get body(): AsyncIterable<Buffer> {
    return this.#answer.chunks((err) => typed(err, "body", this.#signal));
  }

  // Gathered by the dispatch handler, with no stream between: the whole answer is the common case
  // (dispatch.ts, DispatchedAnswer.bytes).
  bytes(): Promise<Buffer> {
    return this.#answer.bytes().catch((err: unknown) => {
      throw typed(err, "body", this.#signal);
    });
  }
}

/** Anthropic's oldest stable version, sent when the caller names none. */
export const DEFAULT_ANTHROPIC_VERSION = "2023-06-01";
export const DEFAULT_AZURE_API_VERSION = "preview";

/** The caller's abort is theirs, rethrown as it came; anything else is typed at this edge. */
function typed(err: unknown, phase: UpstreamPhase, signal: StopSignal): unknown {
  return signal.aborted ? err : (classifyUpstreamError(err, phase) ?? err);
}

/**
 * One provider's connection pool and its in-flight cap. The cap is a plain counter checked by
 * tryAcquire() so that a busy provider is refused at once (503, Retry-After 1); the pool has as
 * many connections as the cap, so a call that got a slot never waits in undici's queue either.
 */
export class Upstream {
  readonly name: string;
  readonly kind: ProviderKind;
  readonly maxInFlight: number;
  // Private so that logging an Upstream can never print the provider key.
  readonly #apiKey: string | null;
  readonly #apiVersion: string;
  readonly #pathPrefix: string;
  readonly #pool: Pool;
  #inFlight = 0;

  constructor(provider: ProviderConfig) {
    this.name = provider.name;
    this.kind = provider.kind;
    this.maxInFlight = provider.maxInFlight;
    this.#apiKey = provider.apiKey;
    this.#apiVersion = provider.apiVersion ?? DEFAULT_AZURE_API_VERSION;
    const base = new URL(provider.baseUrl);
    this.#pathPrefix = base.pathname.replace(/\/+$/, "");
    this.#pool = new Pool(base.origin, {
      connections: provider.maxInFlight,
      connectTimeout: provider.connectTimeoutMs,
      headersTimeout: provider.headersTimeoutMs,
      bodyTimeout: provider.bodyTimeoutMs,
    });
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /** Takes a slot, or returns false at the cap; never waits. Pair every true with one release(). */
  tryAcquire(): boolean {
    if (this.#inFlight >= this.maxInFlight) return false;
    this.#inFlight += 1;
    return true;
  }

  /** Gives the slot back once the response body is consumed or abandoned. */
  release(): void {
    if (this.#inFlight > 0) this.#inFlight -= 1;
  }

  /** Whether a provider key is stored; without one the router answers 503 "No API key is configured for …". */
  get hasApiKey(): boolean {
    return this.#apiKey !== null;
  }

  /**
   * POSTs the call to the provider and resolves with its status and headers, whatever the status:
   * reading a provider error is the caller's business (readProviderError). Transport failures
   * reject with the typed errors of errors.ts.
   */
  send(call: UpstreamCall): Promise<UpstreamResponse> {
    if (this.#apiKey === null) return Promise.reject(new Error(`Provider '${this.name}' has no API key; check hasApiKey before sending`));
    const query = this.kind === "azure_openai" ? `?api-version=${encodeURIComponent(this.#apiVersion)}` : "";
    const options = {
      method: "POST" as const,
      path: `${this.#pathPrefix}${this.kind === "azure_openai" ? "/openai" : ""}${call.path}${query}`,
      headers: this.#headers(this.#apiKey, call.clientHeaders, call.traceHeaders),
      body: call.body,
    };
    // One promise for the call, not an async function's as well.
    return dispatchRequest(this.#pool, options, call.signal).then(
      (answer) => new UndiciResponse(answer, call.signal),
      (err: unknown) => {
        throw typed(err, "request", call.signal);
      },
    );
  }

  /** Waits for calls in flight to finish, then closes the connections. */
  async close(): Promise<void> {
    await this.#pool.close();
  }

  // Built from scratch: nothing of the caller's reaches the provider unless named here, so the
  // gateway key (Authorization, x-api-key) can never leak upstream.
  #headers(key: string, client: Pick<Headers, "get">, trace: TraceHeaders | undefined): Record<string, string> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    switch (this.kind) {
      case "anthropic": {
        headers["x-api-key"] = key;
        headers["anthropic-version"] = client.get("anthropic-version") ?? DEFAULT_ANTHROPIC_VERSION;
        const beta = client.get("anthropic-beta");
        if (beta !== null) headers["anthropic-beta"] = beta;
        break;
      }
      case "openai":
      case "openai_compatible":
        headers.authorization = `Bearer ${key}`;
        break;
      case "azure_openai":
        headers["api-key"] = key;
        break;
    }
    if (trace) {
      headers.traceparent = trace.traceparent;
      if (trace.tracestate !== undefined) headers.tracestate = trace.tracestate;
    }
    return headers;
  }
}

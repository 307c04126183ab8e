import { getGlobalDispatcher, type Dispatcher } from "undici";
import { dispatchRequest, type DispatchedAnswer } from "../../../platform/dispatch.ts";

/**
 * Plug-in: an external HTTP classifier. Each check POSTs `{"text": "..."}` as JSON to the
 * configured URL and expects `{"score": number}` or `{"categories": {name: number}}` back (both
 * may be present). Any failure — connection error, timeout, a non-2xx status, a body that is not
 * that shape — rejects with `ClassifierError`: it is a detector error, and the gateway's
 * fail-open / fail-closed setting decides what the request gets.
 */

export interface HttpClassifierOptions {
  url: string;
  /** Whole-request timeout in milliseconds (connect, send, answer). Default 2000. */
  timeoutMs?: number;
  /** Extra headers, e.g. an authorization header for the classifier service. */
  headers?: Record<string, string>;
  /** An undici dispatcher (connection pool); default: undici's global one. */
  dispatcher?: Dispatcher;
}

export interface HttpClassification {
  score?: number;
  categories?: Record<string, number>;
}

export interface HttpClassifier {
  classify(text: string): Promise<HttpClassification>;
}

export type ClassifierErrorKind = "timeout" | "network" | "status" | "body";

export class ClassifierError extends Error {
  override name = "ClassifierError";
  readonly kind: ClassifierErrorKind;
  constructor(kind: ClassifierErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.kind = kind;
  }
}

function isScore(v: unknown): v is number {
  return typeof v === "number" && Number.isFinite(v) && v >= 0 && v <= 1;
}

/** Checks an answer body; throws ClassifierError("body") when it is not a classification. */
export function parseClassification(body: unknown): HttpClassification {
  if (typeof body !== "object" || body === null) throw new ClassifierError("body", "classifier answer is not a JSON object");
  const { score, categories } = body as { score?: unknown; categories?: unknown };
  const out: HttpClassification = {};
  if (score !== undefined) {
    if (!isScore(score)) throw new ClassifierError("body", "classifier score must be a number in [0, 1]");
    out.score = score;
  }
  if (categories !== undefined) {
    if (typeof categories !== "object" || categories === null || Array.isArray(categories)) {
      throw new ClassifierError("body", "classifier categories must be an object");
    }
    const parsed: Record<string, number> = {};
    for (const [name, value] of Object.entries(categories)) {
      if (!isScore(value)) throw new ClassifierError("body", `classifier category ${name} must be a number in [0, 1]`);
      parsed[name] = value;
    }
    out.categories = parsed;
  }
  if (out.score === undefined && out.categories === undefined) {
    throw new ClassifierError("body", "classifier answer has neither score nor categories");
  }
  return out;
}

export function createHttpClassifier(options: HttpClassifierOptions): HttpClassifier {
  const timeoutMs = options.timeoutMs ?? 2000;
  const url = new URL(options.url);
  return {
    async classify(text) {
      const signal = AbortSignal.timeout(timeoutMs);
      let response: DispatchedAnswer;
      try {
        response = await dispatchRequest(
          options.dispatcher ?? getGlobalDispatcher(),
          {
            origin: url.origin,
            path: `${url.pathname}${url.search}`,
            method: "POST",
            headers: { "content-type": "application/json", accept: "application/json", ...options.headers },
            body: JSON.stringify({ text }),
          },
          signal,
        );
      } catch (error) {
        if (signal.aborted) throw new ClassifierError("timeout", `classifier at ${url.origin} did not answer within ${timeoutMs} ms`, { cause: error });
        throw new ClassifierError("network", `classifier at ${url.origin} unreachable: ${(error as Error).message}`, { cause: error });
      }
      let raw: string;
      try {
        raw = (await response.bytes()).toString();
      } catch (error) {
        if (signal.aborted) throw new ClassifierError("timeout", `classifier at ${url.origin} did not answer within ${timeoutMs} ms`, { cause: error });
        throw new ClassifierError("network", `classifier at ${url.origin} broke off its answer`, { cause: error });
      }
      if (response.statusCode < 200 || response.statusCode > 299) {
        throw new ClassifierError("status", `classifier at ${url.origin} answered ${response.statusCode}`);
      }
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        throw new ClassifierError("body", "classifier answer is not JSON");
      }
      return parseClassification(body);
    },
  };
}

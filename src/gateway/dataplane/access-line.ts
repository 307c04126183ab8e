import { Buffer } from "node:buffer";
import type { IncomingMessage } from "node:http";
import { jsonText, JsonTextMemo } from "../../platform/access-line.ts";

/** What a request's access line reads of what the pipeline learned about it. */
export interface AccessFacts {
  readonly requestId: string;
  readonly endpoint: string;
  readonly key?: { readonly id: string };
  readonly model?: string;
  readonly provider?: string;
  readonly errorType?: string;
  readonly ttfbMs?: number;
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number };
}

/**
 * The members of a gateway request's access-log line, serialised (AccessLineWriter adds level,
 * time, bindings and msg; docs/operations.md, "Logs", lists them). The members that change with
 * every request come first; those that repeat from one request to the next (method, path, key,
 * model, provider, endpoint, error type) follow as one text, kept while they repeat, as the
 * metrics keep a request's series (GatewayMetrics.#kindOf). Looked up one by one, they were seven
 * look-ups and some twenty pieces for V8 to join and copy into every line.
 */
export class AccessMembers {
  /** Each repeated value's JSON text, for a new combination of them. Bounded (JsonTextMemo). */
  readonly #texts = new JsonTextMemo();
  #method: string | undefined;
  #path = "";
  #keyId: string | undefined;
  #model: string | undefined;
  #provider: string | undefined;
  #endpoint = "";
  #errorType: string | undefined;
  /** The last request's repeated members, one flat text. */
  #repeated = "";

  /**
   * `idMadeHere`: the request ID is the gateway's own (a UUID, or a trace ID in hex), which is its
   * own JSON text between quotes; only a caller's needs the test.
   */
  line(req: IncomingMessage, status: number, latencyMs: number, facts: AccessFacts, idMadeHere: boolean): string {
    const requestId = idMadeHere ? `"${facts.requestId}"` : jsonText(facts.requestId);
    return (
      `"requestId":${requestId},"status":${status},"latencyMs":${latencyMs},"ttfbMs":${facts.ttfbMs ?? null},` +
      `"inputTokens":${facts.usage?.inputTokens ?? 0},"outputTokens":${facts.usage?.outputTokens ?? 0},${this.#repeatedOf(req, facts)}`
    );
  }

  #repeatedOf(req: IncomingMessage, facts: AccessFacts): string {
    const url = req.url ?? "/";
    const query = url.indexOf("?");
    const path = query === -1 ? url : url.slice(0, query);
    const keyId = facts.key?.id;
    if (
      this.#repeated !== "" &&
      req.method === this.#method &&
      path === this.#path &&
      keyId === this.#keyId &&
      facts.model === this.#model &&
      facts.provider === this.#provider &&
      facts.endpoint === this.#endpoint &&
      facts.errorType === this.#errorType
    ) {
      return this.#repeated;
    }
    this.#method = req.method;
    this.#path = path;
    this.#keyId = keyId;
    this.#model = facts.model;
    this.#provider = facts.provider;
    this.#endpoint = facts.endpoint;
    this.#errorType = facts.errorType;
    const texts = this.#texts;
    const members =
      `"method":${texts.text(req.method)},"path":${texts.text(path)},"keyId":${texts.text(keyId)},"model":${texts.text(facts.model)},` +
      `"provider":${texts.text(facts.provider)},"endpoint":${texts.text(facts.endpoint)}` +
      (facts.errorType ? `,"errorType":${texts.text(facts.errorType)}` : "");
    // One flat copy (the text is ASCII): joined, it is a tree of some fifteen pieces, which V8
    // would walk again for every line it is copied into.
    this.#repeated = Buffer.from(members, "latin1").toString("latin1");
    return this.#repeated;
  }
}

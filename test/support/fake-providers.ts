/**
 * Fake model providers for tests: real HTTP servers on 127.0.0.1 that speak the Anthropic, OpenAI
 * and Azure OpenAI wire formats, and ("compatible") an OpenAI-compatible chat-only server as vLLM
 * does. Behaviour is chosen per request by directives in the model name (see fakeModel). Answers
 * depend only on the request: ids come from a hash of the kind, method, path and body (canonical
 * JSON: key order and whitespace do not matter); every timestamp is fixed.
 *
 * Endpoints: anthropic POST /v1/messages; openai POST /v1/responses, /v1/chat/completions,
 * /v1/embeddings, /v1/images/generations; azure the same under /openai/v1 (with ?api-version);
 * compatible POST /v1/chat/completions and /v1/embeddings; all GET .../models.
 *
 * The generating endpoints (messages, responses, chat completions) validate what they read as the
 * real API does (a 400 in the provider's own format: fake-providers/*-request.ts), then answer
 * (fake-providers/tools.ts):
 * - a call to a tool (tool_choice's, else the first; arguments from the `toolArgs` directive,
 *   default {"city":"Paris"}) when the request declares tools and its last input is a user turn;
 * - `Tool <name> said: <result text>` when its last input is tool results;
 * - else the `text` directive, or `Hello from <kind>`;
 * and, unless `text` is given, `. Saw <n> image(s).` appended when the request holds images:
 * `Hello from openai. Saw 1 image.` Fault directives (delayMs, hangUp, wire, status) act before
 * that validation.
 */
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { readAnthropicRequest } from "./fake-providers/anthropic-request.ts";
import { anthropicError, anthropicMessage, anthropicModels, anthropicStreamEvents } from "./fake-providers/anthropic.ts";
import { readChatRequest } from "./fake-providers/chat-request.ts";
import { chatCompletion, chatCompletionChunks, chatToolCallIdStyle, type ChatFlavour } from "./fake-providers/chat.ts";
import {
  canonicalJson,
  dataFrame,
  DEFAULT_EVENTS,
  DEFAULT_INPUT_TOKENS,
  DEFAULT_OUTPUT_TOKENS,
  digest,
  DONE_FRAME,
  isRecord,
  MAX_BODY_BYTES,
  namedFrame,
  sseEvent,
  type SseFrame,
} from "./fake-providers/common.ts";
import { COMPATIBLE_UNAUTHORIZED, compatibleEmbeddings, compatibleError, compatibleModels } from "./fake-providers/compatible.ts";
import { parseFakeModel, type FakeDirectives, type WireFault } from "./fake-providers/directives.ts";
import {
  openaiEmbeddings,
  openaiError,
  openaiImages,
  openaiModels,
  openaiResponse,
  openaiResponseStreamEvents,
} from "./fake-providers/openai.ts";
import { echoedToolChoice, echoedTools, readResponsesRequest } from "./fake-providers/responses-request.ts";
import { planAnswer, toolCall, type ReadResult, type ToolCall } from "./fake-providers/tools.ts";

export { fakeModel, parseFakeModel, WIRE_FAULTS } from "./fake-providers/directives.ts";
export type { FakeDirectives, WireFault } from "./fake-providers/directives.ts";
export { fakeEmbedding, EMBEDDING_DIMENSIONS } from "./fake-providers/openai.ts";
export { FAKE_EPOCH_ISO, FAKE_EPOCH_SECONDS, TINY_PNG_BASE64 } from "./fake-providers/common.ts";
export { FAKE_SYSTEM_FINGERPRINT } from "./fake-providers/chat.ts";
export { COMPATIBLE_MODEL_IDS } from "./fake-providers/compatible.ts";
export { DEFAULT_TOOL_ARGS } from "./fake-providers/tools.ts";

export type FakeKind = "anthropic" | "openai" | "azure" | "compatible";

export interface RecordedRequest {
  method: string;
  /** The path without the query. */
  path: string;
  query: URLSearchParams;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  /** The parsed JSON body, or undefined when the body is empty or not JSON. */
  body: unknown;
  raw: string;
}

export interface FakeProvider {
  kind: FakeKind;
  /** http://127.0.0.1:<port>, no trailing slash. */
  url: string;
  /** The only key it accepts. */
  apiKey: string;
  /** Every request received, in order. */
  requests: RecordedRequest[];
  /** Clears requests. */
  reset(): void;
  /** Closes the server and destroys open sockets. */
  close(): Promise<void>;
}

type Endpoint = "messages" | "count_tokens" | "responses" | "chat" | "embeddings" | "images" | "models";

const ROUTES: Record<FakeKind, Record<string, Endpoint>> = {
  anthropic: { "POST /v1/messages": "messages", "POST /v1/messages/count_tokens": "count_tokens", "GET /v1/models": "models" },
  openai: {
    "POST /v1/responses": "responses",
    "POST /v1/chat/completions": "chat",
    "POST /v1/embeddings": "embeddings",
    "POST /v1/images/generations": "images",
    "GET /v1/models": "models",
  },
  azure: {
    "POST /openai/v1/responses": "responses",
    "POST /openai/v1/chat/completions": "chat",
    "POST /openai/v1/embeddings": "embeddings",
    "POST /openai/v1/images/generations": "images",
    "GET /openai/v1/models": "models",
  },
  compatible: {
    "POST /v1/chat/completions": "chat",
    "POST /v1/embeddings": "embeddings",
    "GET /v1/models": "models",
  },
};

interface ErrorOptions {
  type?: string;
  code?: string;
  /** OpenAI and compatible: the `param` the error names. */
  param?: string;
  retryAfter?: number;
}

export async function startFakeProvider(kind: FakeKind, options: { apiKey?: string } = {}): Promise<FakeProvider> {
  const apiKey = options.apiKey ?? `fake-${kind}-key`;
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  /** Cancels every pending delay; each resolves false. */
  const pendingDelays = new Set<() => void>();
  let closing: Promise<void> | undefined;

  const server = http.createServer((req, res) => {
    handle(req, res).catch(() => {
      try {
        if (!res.headersSent && !res.destroyed) sendError(res, "", 500, "The fake provider failed.");
        else res.destroy();
      } catch {
        res.destroy();
      }
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    if (closing) socket.destroy();
  });

  /** Anthropic's request-id, OpenAI's x-request-id; vLLM sends none by default. */
  function requestIdHeaders(hash: string): Record<string, string> {
    const id = `req_${digest("request-id", hash).slice(0, 24)}`;
    if (kind === "compatible") return {};
    return kind === "anthropic" ? { "request-id": id } : { "x-request-id": id };
  }

  function sendJson(res: ServerResponse, hash: string, status: number, value: unknown, extra: Record<string, string> = {}): void {
    const text = JSON.stringify(value);
    res.sendDate = false;
    res.writeHead(status, {
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(text)),
      ...requestIdHeaders(hash),
      ...extra,
    });
    res.end(text);
  }

  function sendError(res: ServerResponse, hash: string, status: number, message: string, opts: ErrorOptions = {}): void {
    const body =
      kind === "anthropic"
        ? anthropicError(status, message, opts.type)
        : kind === "compatible"
          ? compatibleError(status, message, opts.type, opts.code, opts.param)
          : openaiError(status, message, opts.type, opts.code, opts.param);
    sendJson(res, hash, status, body, opts.retryAfter === undefined ? {} : { "retry-after": String(opts.retryAfter) });
  }

  /** Resolves true after ms, or false at once when the client goes away or the fake closes. */
  function delay(ms: number, res: ServerResponse): Promise<boolean> {
    return new Promise((resolve) => {
      const finish = (completed: boolean): void => {
        clearTimeout(timer);
        pendingDelays.delete(cancel);
        res.off("close", cancel);
        resolve(completed);
      };
      const cancel = (): void => finish(false);
      const timer = setTimeout(() => finish(true), ms);
      pendingDelays.add(cancel);
      res.on("close", cancel);
    });
  }

  /** Sends what remains queued on the socket, then destroys it: the body ends without its last chunk. */
  function cut(res: ServerResponse): void {
    const socket = res.socket;
    if (!socket) return;
    socket.end(() => socket.destroy());
  }

  /** Writes a stream of SSE frames, honouring cutAfter, stallAfter and malformedSse (every frame counts, `data: [DONE]` too). */
  function stream(res: ServerResponse, hash: string, events: readonly SseFrame[], d: FakeDirectives): void {
    res.sendDate = false;
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      ...requestIdHeaders(hash),
    });
    const cutAt = d.cutAfter !== undefined && d.cutAfter < events.length ? d.cutAfter : Infinity;
    const stallAt = d.stallAfter !== undefined && d.stallAfter < events.length ? d.stallAfter : Infinity;
    const stop = Math.min(cutAt, stallAt, events.length);
    for (let i = 0; i < stop; i++) {
      const frame = events[i]!;
      res.write(i === 1 && d.malformedSse ? frame.malformed : frame.text);
    }
    if (stop === events.length) {
      res.end();
    } else if (stop === cutAt) {
      res.flushHeaders();
      cut(res);
    } else {
      // Stalled: headers and the events so far go out; the response never ends (close() destroys the socket).
      res.flushHeaders();
    }
  }

  /** Writes bytes that are not a valid HTTP answer straight to the socket, then closes it. */
  function sendWireFault(res: ServerResponse, fault: WireFault, hash: string, stream: boolean): void {
    const socket = res.socket;
    if (!socket) return;
    socket.end(wireFaultBytes(fault, hash, stream), () => socket.destroy());
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const method = req.method ?? "GET";
    const { raw, tooLarge } = await readBody(req);
    let body: unknown;
    try {
      body = raw === "" ? undefined : JSON.parse(raw);
    } catch {
      body = undefined;
    }
    requests.push({ method, path: url.pathname, query: url.searchParams, headers: flattenHeaders(req.headers), body, raw });
    // The seed of ids: the request's meaning (canonical JSON when the body parses), not its formatting.
    const hash = digest(kind, method, url.pathname, body === undefined ? raw : canonicalJson(body));

    // 1. Authentication, each provider its own way.
    const auth = checkAuth(kind, apiKey, req);
    if (auth !== null && kind === "compatible") return sendJson(res, hash, 401, COMPATIBLE_UNAUTHORIZED);
    if (auth !== null) return sendError(res, hash, 401, auth.message, { code: auth.code });

    // 2. Route.
    const endpoint = ROUTES[kind][`${method} ${url.pathname}`];
    if (endpoint === undefined) {
      return sendError(res, hash, 404, kind === "anthropic" ? "Not Found" : `Invalid URL (${method} ${url.pathname})`);
    }

    // 3. Azure wants an api-version.
    if (kind === "azure" && !url.searchParams.get("api-version")) {
      return sendError(res, hash, 400, "Missing required query parameter 'api-version'.", { code: "missing_api_version" });
    }

    if (endpoint === "models") return sendJson(res, hash, 200, kind === "anthropic" ? anthropicModels() : kind === "compatible" ? compatibleModels() : openaiModels());

    // 4. The body: a JSON object with a model.
    if (tooLarge) return sendError(res, hash, 413, `Request body is larger than ${MAX_BODY_BYTES} bytes.`);
    if (!isRecord(body)) {
      return sendError(
        res,
        hash,
        400,
        kind === "anthropic"
          ? "There was an issue with the request body: it is not a JSON object."
          : "We could not parse the JSON body of your request. The body must be a JSON object.",
      );
    }
    const model = body.model;
    const modelRequired = endpoint !== "images";
    if ((modelRequired && model === undefined) || (model !== undefined && (typeof model !== "string" || model === ""))) {
      return sendError(res, hash, 400, kind === "anthropic" ? "model: Field required" : "Missing required parameter: 'model'.");
    }

    // 5. Directives.
    const parsed = typeof model === "string" ? parseFakeModel(model) : { ok: true as const, base: "", directives: {} };
    if (!parsed.ok) return sendError(res, hash, 400, parsed.message);
    const d = parsed.directives;
    if (d.delayMs !== undefined && d.delayMs > 0) {
      if (!(await delay(d.delayMs, res))) {
        res.destroy();
        return;
      }
    }
    if (d.hangUp) {
      req.socket.destroy();
      return;
    }
    const streamed = (endpoint === "messages" || endpoint === "responses" || endpoint === "chat") && body.stream === true;
    if (d.wire !== undefined) return sendWireFault(res, d.wire, hash, streamed);
    if (d.status !== undefined) {
      return sendError(res, hash, d.status, d.message ?? `Fake ${kind} error ${d.status}`, {
        type: d.errorType,
        code: d.errorCode,
        retryAfter: d.retryAfter,
      });
    }

    // 6. The answer.
    const seed = {
      hash,
      model: typeof model === "string" ? model : "",
      text: d.text ?? `Hello from ${kind}`,
      events: d.events ?? DEFAULT_EVENTS,
      inputTokens: d.inputTokens ?? DEFAULT_INPUT_TOKENS,
      outputTokens: d.outputTokens ?? DEFAULT_OUTPUT_TOKENS,
    };
    /** The request, validated and read; a refusal is sent and undefined answered. */
    const answer = (read: ReadResult, idStyle: { prefix: string; length: number }): { text: string; call?: ToolCall } | undefined => {
      if (!read.ok) {
        // vLLM's code is the status; OpenAI's names the problem.
        sendError(res, hash, 400, read.error.message, { param: read.error.param, code: kind === "compatible" ? undefined : read.error.code });
        return undefined;
      }
      const planned = planAnswer(read.reading, d, `Hello from ${kind}`);
      return planned.kind === "text" ? { text: planned.text } : { text: "", call: toolCall(planned, hash, idStyle.prefix, idStyle.length) };
    };
    switch (endpoint) {
      case "count_tokens":
        // Anthropic's answer: the input tokens (the inputTokens directive, else the default).
        return sendJson(res, hash, 200, { input_tokens: seed.inputTokens });
      case "messages": {
        const planned = answer(readAnthropicRequest(body), { prefix: "toolu_", length: 24 });
        if (planned === undefined) return;
        const message = { ...seed, ...planned };
        if (streamed) return stream(res, hash, anthropicStreamEvents(message).map((event) => namedFrame(event.type, event)), d);
        return sendJson(res, hash, 200, anthropicMessage(message));
      }
      case "responses": {
        const planned = answer(readResponsesRequest(body), { prefix: "call_", length: 24 });
        if (planned === undefined) return;
        const response = { ...seed, ...planned, tools: echoedTools(body), toolChoice: echoedToolChoice(body) };
        if (streamed) return stream(res, hash, openaiResponseStreamEvents(response).map((event) => namedFrame(event.type, event)), d);
        return sendJson(res, hash, 200, openaiResponse(response));
      }
      case "chat": {
        const flavour: ChatFlavour = kind === "compatible" ? "compatible" : kind === "azure" ? "azure" : "openai";
        const planned = answer(readChatRequest(body), chatToolCallIdStyle(flavour));
        if (planned === undefined) return;
        const options = isRecord(body.stream_options) ? body.stream_options : undefined;
        // OpenAI sends usage only when asked; vLLM whenever stream_options is given, unless told not to.
        const includeUsage = options !== undefined && (flavour === "compatible" ? options.include_usage !== false : options.include_usage === true);
        const completion = { ...seed, ...planned, flavour, includeUsage };
        if (streamed) return stream(res, hash, [...chatCompletionChunks(completion).map(dataFrame), DONE_FRAME], d);
        return sendJson(res, hash, 200, chatCompletion(completion));
      }
      case "embeddings": {
        const answer = openaiEmbeddings(body, seed.model, seed.inputTokens);
        if (answer === null) return sendError(res, hash, 400, "'input' must be a non-empty string, array of strings, or array of token arrays.");
        return sendJson(res, hash, 200, kind === "compatible" ? compatibleEmbeddings(answer, hash) : answer);
      }
      case "images": {
        const answer = openaiImages(body, seed.inputTokens, seed.outputTokens);
        if (answer === null) return sendError(res, hash, 400, "'n' must be an integer from 1 to 10.");
        return sendJson(res, hash, 200, answer);
      }
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  return {
    kind,
    url: `http://127.0.0.1:${port}`,
    apiKey,
    requests,
    reset() {
      requests.length = 0;
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        for (const cancel of [...pendingDelays]) cancel();
        server.close(() => resolve());
        server.closeAllConnections();
        for (const socket of sockets) socket.destroy();
      });
      return closing;
    },
  };
}

/**
 * Every credential header the request carries must hold the key, and there must be one:
 * Anthropic reads x-api-key and Authorization: Bearer (the official SDK, from 1.x, sends its apiKey
 * as a Bearer token); OpenAI and compatible read Authorization: Bearer; Azure reads api-key, and also
 * checks an Authorization header when there is one. So a caller's credential forwarded upstream is refused.
 */
function checkAuth(kind: FakeKind, apiKey: string, req: IncomingMessage): { message: string; code?: string } | null {
  const bearer = req.headers.authorization;
  const bearerOk = bearer === `Bearer ${apiKey}`;
  switch (kind) {
    case "anthropic": {
      const key = req.headers["x-api-key"];
      if (key === undefined && bearer === undefined) return { message: "x-api-key header is required" };
      if (key !== undefined && key !== apiKey) return { message: "invalid x-api-key" };
      if (bearer !== undefined && !bearerOk) return { message: "Invalid bearer token" };
      return null;
    }
    case "openai":
    case "compatible": {
      if (bearer === undefined) {
        return { message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth." };
      }
      return bearerOk ? null : { message: "Incorrect API key provided.", code: "invalid_api_key" };
    }
    case "azure": {
      if (req.headers["api-key"] === apiKey && (bearer === undefined || bearerOk)) return null;
      return {
        message:
          "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.",
        code: "401",
      };
    }
  }
}

function flattenHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return flat;
}

/** Reads the body, keeping at most MAX_BODY_BYTES of it. */
function readBody(req: IncomingMessage): Promise<{ raw: string; tooLarge: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        tooLarge = true;
        chunks.length = 0;
      } else {
        chunks.push(chunk);
      }
    });
    req.on("end", () => resolve({ raw: tooLarge ? "" : Buffer.concat(chunks).toString("utf8"), tooLarge }));
    req.on("error", reject);
    req.on("close", () => reject(new Error("The client went away before the body ended.")));
  });
}

/** The bytes of a wire fault; `random` is derived from the request, so it repeats. */
function wireFaultBytes(fault: WireFault, hash: string, stream: boolean): Buffer {
  switch (fault) {
    case "garbage":
      return Buffer.from("garbage\r\n\r\n");
    case "random": {
      const noise: Buffer[] = [];
      for (let i = 0; i < 8; i++) noise.push(Buffer.from(digest("noise", hash, String(i)), "hex"));
      return Buffer.concat(noise);
    }
    case "half-header":
      return Buffer.from("HTTP/1.1 200 OK\r\nContent-Ty");
    case "bad-header":
      return Buffer.from("HTTP/1.1 200 OK\r\nX-Broken: a\u0001b\r\nContent-Length: 2\r\n\r\n{}");
    case "bad-status":
      return Buffer.from("HTTP/1.1 999999 OK\r\nContent-Length: 2\r\n\r\n{}");
    case "header-overflow":
      return Buffer.from(`HTTP/1.1 200 OK\r\nX-Huge: ${"a".repeat(64 * 1024)}\r\nContent-Length: 2\r\n\r\n{}`);
    case "bad-chunk": {
      const type = stream ? "text/event-stream; charset=utf-8" : "application/json";
      const first = stream ? sseEvent("ping", { type: "ping" }) : "{";
      const size = Buffer.byteLength(first).toString(16);
      return Buffer.from(`HTTP/1.1 200 OK\r\nContent-Type: ${type}\r\nTransfer-Encoding: chunked\r\n\r\n${size}\r\n${first}\r\nzz\r\nnot a chunk\r\n`);
    }
  }
}

import Anthropic from "@anthropic-ai/sdk";
import http from "node:http";
import type { AddressInfo } from "node:net";
import OpenAI from "openai";
import { errors as undiciErrors } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import type { ProviderConfig } from "../src/gateway/config/types.ts";
import * as gw from "../src/gateway/dataplane/errors.ts";
import {
  classifyUpstreamError,
  readProviderError,
  readProviderErrorBody,
  UpstreamBodyTimeoutError,
  UpstreamConnectionError,
  UpstreamTimeoutError,
} from "../src/gateway/providers/errors.ts";
import { nextSequenceNumber, SseEvent, SseSplitter, sseEvents, streamErrorEvent } from "../src/gateway/providers/sse.ts";
import { Upstream, type UpstreamCall } from "../src/gateway/providers/upstream.ts";
import { endpointSpecs, type EndpointName } from "../src/gateway/endpoints/specs.ts";
import { heldBackWriter } from "./support/held-back.ts";

// Tiny loopback servers, one per test, closed after it.

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(handler: (req: http.IncomingMessage, res: http.ServerResponse, seen: Seen) => void) {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const s = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString() };
      seen.push(s);
      handler(req, res, s);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

function provider(overrides: Partial<ProviderConfig>): ProviderConfig {
  return {
    id: "p1",
    workspaceId: "w1",
    name: "main",
    kind: "openai",
    baseUrl: "http://127.0.0.1:1",
    apiKey: "provider-secret",
    connectTimeoutMs: 2000,
    headersTimeoutMs: 5000,
    bodyTimeoutMs: 5000,
    maxInFlight: 4,
    apiVersion: null,
    ...overrides,
  };
}

function upstream(config: ProviderConfig): Upstream {
  const u = new Upstream(config);
  cleanups.push(() => u.close());
  return u;
}

const GATEWAY_KEY = "sk-gw-caller-secret";

function call(endpoint: EndpointName, headers: Record<string, string> = {}): UpstreamCall {
  return {
    path: endpointSpecs[endpoint].path,
    body: Buffer.from('{"model":"m","input":"é"}'),
    clientHeaders: new Headers({ authorization: `Bearer ${GATEWAY_KEY}`, "x-api-key": GATEWAY_KEY, ...headers }),
    signal: new AbortController().signal,
  };
}

async function text(body: AsyncIterable<Buffer>): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks).toString();
}

const ok = (_req: http.IncomingMessage, res: http.ServerResponse) => {
  res.writeHead(200, { "content-type": "application/json" });
  res.end('{"ok":true}');
};

function expectNoGatewayKey(seen: Seen) {
  for (const value of Object.values(seen.headers)) expect(String(value)).not.toContain(GATEWAY_KEY);
}

describe("Upstream: URL and headers per kind", () => {
  it("anthropic: x-api-key, the caller's anthropic-version and anthropic-beta, under the base path", async () => {
    const server = await serve(ok);
    const u = upstream(provider({ kind: "anthropic", baseUrl: `${server.url}/proxy/` }));
    const res = await u.send(
      call("messages", { "anthropic-version": "2024-10-22", "anthropic-beta": "tools-2024", "x-request-id": "r1" }),
    );
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("application/json");
    expect(await text(res.body)).toBe('{"ok":true}');
    const [seen] = server.seen;
    expect(seen.method).toBe("POST");
    expect(seen.url).toBe("/proxy/v1/messages");
    expect(seen.body).toBe('{"model":"m","input":"é"}');
    expect(seen.headers["x-api-key"]).toBe("provider-secret");
    expect(seen.headers["anthropic-version"]).toBe("2024-10-22");
    expect(seen.headers["anthropic-beta"]).toBe("tools-2024");
    expect(seen.headers["content-type"]).toBe("application/json");
    expect(seen.headers.authorization).toBeUndefined();
    expect(seen.headers["x-request-id"]).toBeUndefined();
    expectNoGatewayKey(seen);
  });

  it("anthropic: default anthropic-version, no anthropic-beta when the caller sends none", async () => {
    const server = await serve(ok);
    const u = upstream(provider({ kind: "anthropic", baseUrl: server.url }));
    await text((await u.send(call("messages"))).body);
    const [seen] = server.seen;
    expect(seen.url).toBe("/v1/messages");
    expect(seen.headers["anthropic-version"]).toBe("2023-06-01");
    expect(seen.headers["anthropic-beta"]).toBeUndefined();
    expectNoGatewayKey(seen);
  });

  it("openai: Bearer provider key on each endpoint's path; no Anthropic headers", async () => {
    const server = await serve(ok);
    const u = upstream(provider({ kind: "openai", baseUrl: server.url }));
    for (const endpoint of ["responses", "embeddings", "images"] as const) {
      await text((await u.send(call(endpoint, { "anthropic-version": "2023-06-01" }))).body);
    }
    expect(server.seen.map((s) => s.url)).toEqual(["/v1/responses", "/v1/embeddings", "/v1/images/generations"]);
    for (const seen of server.seen) {
      expect(seen.headers.authorization).toBe("Bearer provider-secret");
      expect(seen.headers["x-api-key"]).toBeUndefined();
      expect(seen.headers["anthropic-version"]).toBeUndefined();
      expect(seen.headers["content-type"]).toBe("application/json");
      expectNoGatewayKey(seen);
    }
  });

  it("azure_openai: api-key header, /openai/v1 paths, api-version from config or 'preview'", async () => {
    const server = await serve(ok);
    const pinned = upstream(provider({ kind: "azure_openai", baseUrl: server.url, apiVersion: "2025-04-01-preview" }));
    const unpinned = upstream(provider({ kind: "azure_openai", baseUrl: server.url }));
    await text((await pinned.send(call("responses"))).body);
    await text((await unpinned.send(call("embeddings"))).body);
    await text((await unpinned.send(call("images"))).body);
    expect(server.seen.map((s) => s.url)).toEqual([
      "/openai/v1/responses?api-version=2025-04-01-preview",
      "/openai/v1/embeddings?api-version=preview",
      "/openai/v1/images/generations?api-version=preview",
    ]);
    for (const seen of server.seen) {
      expect(seen.headers["api-key"]).toBe("provider-secret");
      expect(seen.headers.authorization).toBeUndefined();
      expectNoGatewayKey(seen);
    }
  });

  it("returns a provider error as a response, whatever its status", async () => {
    const server = await serve((_req, res) => {
      res.writeHead(429, { "retry-after": "30" });
      res.end('{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}');
    });
    const res = await upstream(provider({ baseUrl: server.url })).send(call("responses"));
    expect(res.status).toBe(429);
    expect(readProviderError(res.status, await readProviderErrorBody(res.body))).toEqual({ message: "Rate limit reached" });
  });

  it("refuses a provider without a key before any call", async () => {
    const server = await serve(ok);
    const keyless = upstream(provider({ baseUrl: server.url, apiKey: null }));
    expect(keyless.hasApiKey).toBe(false);
    await expect(keyless.send(call("responses"))).rejects.toThrow("Provider 'main' has no API key");
    expect(server.seen).toEqual([]);
  });

  it("does not show the provider key when the Upstream is inspected or serialised", async () => {
    const u = upstream(provider({}));
    const { inspect } = await import("node:util");
    expect(inspect(u, { depth: 5 })).not.toContain("provider-secret");
    expect(JSON.stringify(u)).not.toContain("provider-secret");
  });
});

describe("Upstream: capacity", () => {
  it("tryAcquire refuses past maxInFlight at once, and the held calls all reach the provider", async () => {
    const held: http.ServerResponse[] = [];
    let arrived: () => void = () => {};
    const bothArrived = new Promise<void>((resolve) => (arrived = resolve));
    const server = await serve((_req, res) => {
      held.push(res);
      if (held.length === 2) arrived();
    });
    const u = upstream(provider({ baseUrl: server.url, maxInFlight: 2 }));
    expect(u.tryAcquire()).toBe(true);
    expect(u.tryAcquire()).toBe(true);
    const calls = [u.send(call("responses")), u.send(call("responses"))];
    await bothArrived; // two connections: neither call waited behind the other
    expect(u.tryAcquire()).toBe(false);
    expect(u.inFlight).toBe(2);
    for (const res of held) res.end("{}");
    for (const res of await Promise.all(calls)) await text(res.body);
    u.release();
    expect(u.tryAcquire()).toBe(true);
    u.release();
    u.release();
    u.release(); // an extra release never goes below zero
    expect(u.inFlight).toBe(0);
  });
});

describe("Upstream: the answer's body", () => {
  it("holds the provider back while nobody reads it, and arrives whole once read", async () => {
    // 32 MB: far more than the socket buffers between the two and the body's own buffer hold.
    const total = 32 * 1024 * 1024;
    const writer = heldBackWriter(total);
    const server = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "application/octet-stream" });
      writer.write(res);
    });
    const answer = await upstream(provider({ baseUrl: server.url })).send(call("responses"));
    // Unread, the answer stops the provider: it waits to write, and what it sent stays put.
    await writer.stalled();
    expect(writer.sent).toBeLessThan(total / 2);
    // Read, every byte the provider wrote arrives.
    expect((await answer.bytes()).length).toBe(total);
  });

  it("destroyed before its end, stops the provider call", async () => {
    let closed!: () => void;
    const providerSawClose = new Promise<void>((resolve) => (closed = resolve));
    const server = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("event: a\ndata: {}\n\n");
      res.on("close", () => closed());
    });
    // The provider's own timeouts past the test's: only the gateway's leaving can close the call.
    const answer = await upstream(provider({ baseUrl: server.url, bodyTimeoutMs: 120_000 })).send(call("responses"));
    for await (const _chunk of answer.body) break;
    await providerSawClose;
  });

  it("skips an interim 1xx answer: the final status and headers are the call's", async () => {
    const server = await serve((_req, res) => {
      res.writeProcessing();
      res.writeHead(201, { "content-type": "application/json", "x-final": "yes" });
      res.end('{"ok":true}');
    });
    const answer = await upstream(provider({ baseUrl: server.url })).send(call("responses"));
    expect(answer.status).toBe(201);
    expect(answer.headers["x-final"]).toBe("yes");
    expect((await answer.bytes()).toString()).toBe('{"ok":true}');
  });
});

describe("Upstream: transport failures are typed", () => {
  it("no headers within headersTimeoutMs: UpstreamTimeoutError", async () => {
    const server = await serve(() => {});
    const u = upstream(provider({ baseUrl: server.url, headersTimeoutMs: 100 }));
    const err = await u.send(call("responses")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamTimeoutError);
    expect(err).toMatchObject({ code: "UND_ERR_HEADERS_TIMEOUT", phase: "request" });
    expect(gw.asGatewayError(err)).toMatchObject({ status: 504, message: "The provider did not answer in time." });
  });

  it("a socket destroyed before answering: UpstreamConnectionError", async () => {
    const server = await serve((req) => req.socket.destroy());
    const err = await upstream(provider({ baseUrl: server.url }))
      .send(call("responses"))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamConnectionError);
    expect(err).toMatchObject({ code: "UND_ERR_SOCKET", phase: "request" });
    expect(gw.asGatewayError(err)).toMatchObject({
      status: 502,
      message: "The provider could not be reached or closed the connection without answering.",
    });
  });

  it("a refused connection: UpstreamConnectionError ECONNREFUSED", async () => {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const err = await upstream(provider({ baseUrl: `http://127.0.0.1:${port}` }))
      .send(call("responses"))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamConnectionError);
    expect(err).toMatchObject({ code: "ECONNREFUSED" });
  });

  it("silence mid-body past bodyTimeoutMs: UpstreamBodyTimeoutError from the body", async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("event: a\ndata: {}\n\n");
    });
    const res = await upstream(provider({ baseUrl: server.url, bodyTimeoutMs: 100 })).send(call("responses"));
    const chunks: string[] = [];
    const err = await (async () => {
      for await (const chunk of res.body) chunks.push(chunk.toString());
    })().catch((e: unknown) => e);
    expect(chunks.join("")).toBe("event: a\ndata: {}\n\n");
    expect(err).toBeInstanceOf(UpstreamBodyTimeoutError);
    expect(err).toMatchObject({ code: "UND_ERR_BODY_TIMEOUT", phase: "body" });
    expect(gw.asGatewayError(err)).toMatchObject({
      status: 504,
      message: "The provider stopped sending its response before it was complete.",
    });
  });

  it("a socket destroyed mid-body: UpstreamConnectionError in the body phase", async () => {
    const server = await serve((req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("event: a\ndata: {}\n\n", () => setImmediate(() => req.socket.destroy()));
    });
    const res = await upstream(provider({ baseUrl: server.url })).send(call("responses"));
    const err = await text(res.body).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamConnectionError);
    expect(err).toMatchObject({ phase: "body" });
    expect(gw.asGatewayError(err)).toMatchObject({
      status: 502,
      message: "The provider closed the connection before its response was complete.",
    });
  });

  it("the caller's abort is not an upstream error: it is rethrown as is", async () => {
    const server = await serve(() => {});
    const controller = new AbortController();
    const reason = new Error("client went away");
    const pending = upstream(provider({ baseUrl: server.url })).send({ ...call("responses"), signal: controller.signal });
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
  });

  it("the caller's abort mid-body is not an upstream error either", async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("event: a\ndata: {}\n\n");
    });
    const controller = new AbortController();
    const reason = new Error("client went away");
    const res = await upstream(provider({ baseUrl: server.url })).send({ ...call("responses"), signal: controller.signal });
    const err = await (async () => {
      for await (const _chunk of res.body) controller.abort(reason);
    })().catch((e: unknown) => e);
    expect(err).toBe(reason);
  });
});

describe("classifyUpstreamError", () => {
  it("maps undici and socket codes to the typed errors", () => {
    const withCode = (code: string) => Object.assign(new Error(code), { code });
    const cases: [unknown, string, string][] = [
      [new undiciErrors.HeadersTimeoutError(), "UpstreamTimeoutError", "UND_ERR_HEADERS_TIMEOUT"],
      [new undiciErrors.ConnectTimeoutError(), "UpstreamTimeoutError", "UND_ERR_CONNECT_TIMEOUT"],
      [new undiciErrors.BodyTimeoutError(), "UpstreamBodyTimeoutError", "UND_ERR_BODY_TIMEOUT"],
      [new undiciErrors.SocketError("other side closed"), "UpstreamConnectionError", "UND_ERR_SOCKET"],
      [new undiciErrors.ClientClosedError(), "UpstreamConnectionError", "UND_ERR_CLOSED"],
      [withCode("ECONNREFUSED"), "UpstreamConnectionError", "ECONNREFUSED"],
      [withCode("ECONNRESET"), "UpstreamConnectionError", "ECONNRESET"],
      [withCode("EPIPE"), "UpstreamConnectionError", "EPIPE"],
      [withCode("HPE_INVALID_CONSTANT"), "UpstreamConnectionError", "HPE_INVALID_CONSTANT"],
      [new Error("other side closed"), "UpstreamConnectionError", "UND_ERR_SOCKET"],
      // Undici aborting a request of its own accord; the caller's abort never gets here (below).
      [new undiciErrors.RequestAbortedError(), "UpstreamConnectionError", "UND_ERR_ABORTED"],
    ];
    for (const [err, name, code] of cases) {
      const typed = classifyUpstreamError(err);
      expect(typed?.name).toBe(name);
      expect(typed?.code).toBe(code);
      expect(typed?.cause).toBe(err);
    }
  });

  it("leaves the caller's abort and anything unknown unclassified", () => {
    expect(classifyUpstreamError(new DOMException("aborted", "AbortError"))).toBeUndefined();
    expect(classifyUpstreamError(new TypeError("bug"))).toBeUndefined();
    expect(classifyUpstreamError("string")).toBeUndefined();
  });
});

describe("readProviderError", () => {
  it("takes Anthropic's and OpenAI's error.message, dropping code and type", () => {
    expect(
      readProviderError(400, '{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}'),
    ).toEqual({ message: "max_tokens: Field required" });
    expect(
      readProviderError(404, '{"error":{"message":"The model `x` does not exist","type":"invalid_request_error","param":null,"code":"model_not_found"}}'),
    ).toEqual({ message: "The model `x` does not exist" });
  });

  it("falls back to the trimmed text, capped, then to the HTTP reason", () => {
    expect(readProviderError(502, "  upstream connect error\n")).toEqual({ message: "upstream connect error" });
    expect(readProviderError(500, '{"unexpected":true}')).toEqual({ message: '{"unexpected":true}' });
    expect(readProviderError(500, "{not json")).toEqual({ message: "{not json" });
    expect(readProviderError(500, '{"error":{"message":""}}')).toEqual({ message: '{"error":{"message":""}}' });
    expect(readProviderError(503, " \n ")).toEqual({ message: "Service Unavailable" });
    expect(readProviderError(599, "")).toEqual({ message: "HTTP 599" });
    expect(readProviderError(500, "x".repeat(1500))).toEqual({ message: `${"x".repeat(1000)}…` });
    expect(readProviderError(500, `${"x".repeat(999)}😀tail`)).toEqual({ message: `${"x".repeat(999)}…` });
  });

  it("readProviderErrorBody stops at its cap", async () => {
    async function* chunks() {
      yield Buffer.from("abc");
      yield Buffer.from("def");
      throw new Error("never read");
    }
    expect(await readProviderErrorBody(chunks(), 4)).toBe("abcd");
  });
});

describe("gateway errors: messages", () => {
  it("every gateway-originated message, exactly", () => {
    const cases: [gw.GatewayError, number, string, number | undefined][] = [
      [gw.streamingImagesUnsupported(), 400, "Streaming image generation is not supported.", undefined],
      [gw.bodyNotJsonObject(), 400, "The request body must be a JSON object.", undefined],
      [gw.bodyWithoutModel(), 400, "The request body must name a model: 'model' is missing or is not a non-empty string.", undefined],
      [gw.missingApiKey(), 401, "Missing API key. Send your gateway key as 'Authorization: Bearer <key>' or in the 'x-api-key' header.", undefined],
      [gw.invalidApiKey(), 401, "Invalid API key.", undefined],
      [gw.disabledApiKey(), 401, "Invalid API key. This key is disabled.", undefined],
      [gw.modelBlocked("gpt-4o"), 403, "The model 'gpt-4o' is not available through this gateway. If this is unexpected, contact your administrator.", undefined],
      [gw.unknownPath("/v1/nope"), 404, "There is no endpoint at '/v1/nope'.", undefined],
      [gw.methodNotAllowed("GET", "/v1/responses", ["POST"]), 405, "Method GET is not allowed on '/v1/responses'. Allowed: POST.", undefined],
      [gw.bodyTooLarge(1048576), 413, "The request body is too large: at most 1048576 bytes are accepted.", undefined],
      [gw.guardrailBlocked("pii", "input", gw.piiReason(["US_SSN", "EMAIL_ADDRESS", "US_SSN"])), 422, "Detected high-risk PII entities: EMAIL_ADDRESS, US_SSN", undefined],
      [gw.guardrailBlocked("prompt_injection", "input", gw.promptInjectionReason(0.9731)), 422, "Detected prompt injection attempt (score: 0.97)", undefined],
      [gw.guardrailBlocked("content_safety", "output", gw.toxicContentReason("hate", 0.912, 0.5)), 422, "Detected toxic content: hate=0.91 (threshold: 0.50)", undefined],
      [gw.usageLimitReached("daily"), 429, "You've reached the daily limit. Your limit will reset tomorrow. If this is unexpected, contact your administrator.", undefined],
      [gw.usageLimitReached("weekly", new Date("2025-06-09T00:00:00Z")), 429, "You've reached the weekly limit. Your limit will reset on 2025-06-09. If this is unexpected, contact your administrator.", undefined],
      [gw.usageLimitReached("monthly", new Date("2025-07-01T00:00:00Z")), 429, "You've reached the monthly limit. Your limit will reset on 2025-07-01. If this is unexpected, contact your administrator.", undefined],
      [gw.usageLimitReached("all_time"), 429, "You've reached your usage limit. If this is unexpected, contact your administrator.", undefined],
      [gw.gatewayAtCapacity(), 503, "gateway at capacity: too many requests in flight. Retry shortly.", 1],
      [gw.noUpstreamCapacity("main"), 503, "no upstream capacity for provider 'main': too many calls in flight. Retry shortly.", 1],
      [gw.guardrailLoading("pii"), 503, "The PII guardrail is still loading. Retry in a few seconds.", 5],
      [gw.guardrailLoading("prompt_injection"), 503, "The prompt injection guardrail is still loading. Retry in a few seconds.", 5],
      [gw.guardrailLoading("content_safety"), 503, "The content safety guardrail is still loading. Retry in a few seconds.", 5],
      [gw.databaseUnavailable("the API key"), 503, "The gateway's database is unavailable: the API key could not be checked in time. Retry in a few seconds.", 5],
      [gw.noProviderApiKey("main"), 503, "No API key is configured for provider 'main'. An administrator must store one.", undefined],
      [gw.providerNotConfigured("gone"), 503, "Provider 'gone' is not configured. A routing rule targets it: create the provider or change the rule's target.", undefined],
      [gw.routingRuleWrongProvider("claude", "anthropic", "embeddings"), 503, "The routing rule for this request targets provider 'claude' (Anthropic), which does not serve embeddings. Point the rule at an OpenAI, Azure OpenAI or OpenAI-compatible provider.", undefined],
      [gw.routingRuleWrongProvider("claude", "anthropic", "images"), 503, "The routing rule for this request targets provider 'claude' (Anthropic), which does not serve image generation. Point the rule at an OpenAI or Azure OpenAI provider.", undefined],
      [gw.routingRuleWrongProvider("local", "openai_compatible", "images"), 503, "The routing rule for this request targets provider 'local' (OpenAI-compatible), which does not serve image generation. Point the rule at an OpenAI or Azure OpenAI provider.", undefined],
      [gw.routingRuleModelBasedEmbeddings("main"), 503, "The routing rule for this request targets provider 'main' by model name, and embeddings cannot be routed by model. Add a routing rule that lists no models and targets an OpenAI or Azure OpenAI provider.", undefined],
      [gw.noRoutingRule("gpt-4o"), 503, "No routing rule resolves requests for model 'gpt-4o'. Add a routing rule that matches it, or one that lists no models.", undefined],
      [gw.internalError(), 500, "The gateway failed to handle this request.", undefined],
    ];
    for (const [error, status, message, retryAfter] of cases) {
      expect({ status: error.status, message: error.message, retryAfter: error.retryAfter }).toEqual({ status, message, retryAfter });
    }
  });

  it("the allow-list 403 names at most five distinct models, or says there are none", () => {
    expect(gw.modelNotAllowed("o3", ["a", "b", "a", "c", "d", "e", "f"]).message).toBe(
      "The model 'o3' is not available to this API key. Available models include: a, b, c, d, e. If this is unexpected, contact your administrator.",
    );
    expect(gw.modelNotAllowed("o3", ["gpt-4o"]).message).toBe(
      "The model 'o3' is not available to this API key. Available models include: gpt-4o. If this is unexpected, contact your administrator.",
    );
    expect(gw.modelNotAllowed("o3", []).message).toBe(
      "The model 'o3' is not available to this API key. No models are available to this API key. If this is unexpected, contact your administrator.",
    );
    expect(gw.modelNotAllowed("o3", []).status).toBe(403);
  });

  it("a weekly or monthly limit needs its reset date", () => {
    expect(() => gw.usageLimitReached("weekly")).toThrow("a weekly limit needs its reset date");
  });

  it("provider errors: 4xx kept (429 too), 5xx and others become 502, message kept, no Retry-After", () => {
    const cases: [number, number][] = [[400, 400], [401, 401], [404, 404], [413, 413], [429, 429], [500, 502], [503, 502], [529, 502], [302, 502]];
    for (const [provider, status] of cases) {
      const error = gw.providerErrorToGatewayError(provider, "provider says no");
      expect([error.status, error.message, error.retryAfter]).toEqual([status, "provider says no", undefined]);
    }
  });

  it("asGatewayError keeps gateway errors and hides anything else behind a 500", () => {
    const blocked = gw.modelBlocked("m");
    expect(gw.asGatewayError(blocked)).toBe(blocked);
    expect(gw.asGatewayError(new Error("secret internals")).message).toBe("The gateway failed to handle this request.");
  });
});

describe("gateway errors: rendering", () => {
  const json = { "content-type": "application/json" };
  /** What no retry can fix says so, for the SDKs. */
  const final = { ...json, "x-should-retry": "false" };

  it("messages style", () => {
    expect(gw.renderError("messages", gw.invalidApiKey())).toEqual({
      status: 401,
      headers: final,
      body: '{"type":"error","error":{"type":"authentication_error","message":"Invalid API key."}}',
    });
    expect(gw.renderError("messages", gw.gatewayAtCapacity())).toEqual({
      status: 503,
      headers: { ...json, "retry-after": "1" },
      body: '{"type":"error","error":{"type":"api_error","message":"gateway at capacity: too many requests in flight. Retry shortly."}}',
    });
    expect(gw.renderError("messages", gw.guardrailBlocked("prompt_injection", "input", "Detected prompt injection attempt (score: 0.99)"))).toEqual({
      status: 422,
      headers: final,
      body: '{"type":"error","error":{"type":"invalid_request_error","message":"Detected prompt injection attempt (score: 0.99)"}}',
    });
  });

  it("responses style", () => {
    expect(gw.renderError("responses", gw.modelBlocked("gpt-4o"))).toEqual({
      status: 403,
      headers: final,
      body: `{"error":{"message":"The model 'gpt-4o' is not available through this gateway. If this is unexpected, contact your administrator.","type":"permission_error","param":null,"code":null}}`,
    });
    expect(gw.renderError("responses", gw.guardrailLoading("pii"))).toEqual({
      status: 503,
      headers: { ...json, "retry-after": "5" },
      body: '{"error":{"message":"The PII guardrail is still loading. Retry in a few seconds.","type":"api_error","param":null,"code":null}}',
    });
    expect(gw.renderError("responses", gw.methodNotAllowed("GET", "/v1/responses", ["POST"]))).toEqual({
      status: 405,
      headers: { allow: "POST", ...final },
      body: `{"error":{"message":"Method GET is not allowed on '/v1/responses'. Allowed: POST.","type":"invalid_request_error","param":null,"code":null}}`,
    });
  });

  it("images style: detail is the message, or the guardrail's object", () => {
    expect(gw.renderError("images", gw.streamingImagesUnsupported())).toEqual({
      status: 400,
      headers: final,
      body: '{"detail":"Streaming image generation is not supported."}',
    });
    expect(gw.renderError("images", gw.guardrailBlocked("content_safety", "input", "Detected toxic content: violence=0.88 (threshold: 0.70)"))).toEqual({
      status: 422,
      headers: final,
      body: '{"detail":{"type":"content_safety","stage":"input","reason":"Detected toxic content: violence=0.88 (threshold: 0.70)"}}',
    });
  });

  it("says which errors no retry can fix: x-should-retry: false", () => {
    const header = (error: InstanceType<typeof gw.GatewayError>) => gw.renderError("responses", error).headers["x-should-retry"];
    expect(header(gw.usageLimitReached("daily"))).toBe("false");
    expect(header(gw.noRoutingRule("m"))).toBe("false");
    expect(header(gw.noProviderApiKey("p"))).toBe("false");
    expect(header(gw.providerNotConfigured("p"))).toBe("false");
    expect(header(gw.providerErrorToGatewayError(400, "bad"))).toBe("false");
    // Those a retry may fix leave the SDKs to their own policy.
    expect(header(gw.gatewayAtCapacity())).toBeUndefined();
    expect(header(gw.databaseUnavailable("the API key"))).toBeUndefined();
    expect(header(gw.providerErrorToGatewayError(429, "slow down"))).toBeUndefined();
    expect(header(gw.providerErrorToGatewayError(500, "boom"))).toBeUndefined();
    expect(header(new gw.GatewayError(504, "late"))).toBeUndefined();
  });

  it("type follows the status table", () => {
    const types = [400, 401, 403, 404, 405, 413, 422, 429, 500, 502, 503, 504].map((status) => [
      status,
      JSON.parse(gw.renderError("messages", new gw.GatewayError(status, "m")).body).error.type,
    ]);
    expect(types).toEqual([
      [400, "invalid_request_error"],
      [401, "authentication_error"],
      [403, "permission_error"],
      [404, "not_found_error"],
      [405, "invalid_request_error"],
      [413, "invalid_request_error"],
      [422, "invalid_request_error"],
      [429, "rate_limit_error"],
      [500, "api_error"],
      [502, "api_error"],
      [503, "api_error"],
      [504, "api_error"],
    ]);
  });

  it("a provider 429 renders without Retry-After, as 429 rate_limit_error", () => {
    expect(gw.renderError("responses", gw.providerErrorToGatewayError(429, "Rate limit reached"))).toEqual({
      status: 429,
      headers: json,
      body: '{"error":{"message":"Rate limit reached","type":"rate_limit_error","param":null,"code":null}}',
    });
  });

  it("model listings: style by prefix, else by anthropic-version", () => {
    const none = new Headers();
    const anthropic = new Headers({ "anthropic-version": "2023-06-01" });
    expect(gw.styleForModels("/anthropic", none)).toBe("messages");
    expect(gw.styleForModels("/openai", anthropic)).toBe("responses");
    expect(gw.styleForModels("", anthropic)).toBe("messages");
    expect(gw.styleForModels("", none)).toBe("responses");
  });
});

// SSE

const sampleEvents = [
  'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1"}}\n\n',
  ": keep-alive comment\n\n",
  'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"text":"héllo 😀 世界"}}\n\n',
  "event: broken\ndata: {not json\n\n",
  "data: line one\ndata:line two\n\n",
  'event: message_stop\ndata: {"type":"message_stop"}\n\n',
];

function split(bytes: Buffer, at: number[]): Buffer[] {
  const chunks: Buffer[] = [];
  let from = 0;
  for (const point of [...at, bytes.length]) {
    chunks.push(Buffer.from(bytes.subarray(from, point)));
    from = point;
  }
  return chunks;
}

async function* iterate(chunks: Buffer[]): AsyncGenerator<Buffer> {
  yield* chunks;
}

async function collect(chunks: Buffer[]): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  for await (const event of sseEvents(iterate(chunks))) events.push(event);
  return events;
}

function withTerminator(events: string[], eol: string): string[] {
  return events.map((e) => e.replace(/\n/g, eol));
}

describe("SSE splitter", () => {
  for (const [label, eol] of [["LF", "\n"], ["CRLF", "\r\n"], ["CR", "\r"]] as const) {
    it(`${label}: yields each complete event's exact bytes at every split point`, async () => {
      const expected = withTerminator(sampleEvents, eol);
      const bytes = Buffer.from(expected.join(""));
      const chunkings = [[bytes], split(bytes, [...bytes.keys()].slice(1))];
      for (let at = 1; at < bytes.length; at++) chunkings.push(split(bytes, [at]));
      for (let at = 1; at + 7 < bytes.length; at += 5) chunkings.push(split(bytes, [at, at + 3, at + 7]));
      for (const chunks of chunkings) {
        const events = await collect(chunks);
        expect(events.map((e) => e.raw.toString())).toEqual(expected);
      }
    });
  }

  it("parses names and data lazily, joining data lines, reporting malformed data", async () => {
    const events = await collect(split(Buffer.from(sampleEvents.join("")), [5, 90, 91, 92, 150]));
    expect(events.map((e) => e.name)).toEqual(["message_start", null, "content_block_delta", "broken", null, "message_stop"]);
    expect(events.map((e) => e.json)).toEqual([
      { kind: "json", value: { type: "message_start", message: { id: "msg_1" } } },
      { kind: "none" },
      { kind: "json", value: { type: "content_block_delta", delta: { text: "héllo 😀 世界" } } },
      { kind: "malformed", text: "{not json", error: expect.any(String) },
      { kind: "malformed", text: "line one\nline two", error: expect.any(String) },
      { kind: "json", value: { type: "message_stop" } },
    ]);
    expect(events[4].data).toBe("line one\nline two");
  });

  it("keeps a multi-byte character split across chunks whole", async () => {
    const bytes = Buffer.from('data: {"t":"😀"}\n\n');
    const emoji = bytes.indexOf(Buffer.from("😀"));
    for (const at of [emoji + 1, emoji + 2, emoji + 3]) {
      const [event] = await collect(split(bytes, [at]));
      expect(event.json).toEqual({ kind: "json", value: { t: "😀" } });
    }
  });

  it("a CR ending a blank line at a chunk's end waits for a possible LF", () => {
    const splitter = new SseSplitter();
    expect(splitter.push(Buffer.from("data: 1\r\r"))).toEqual([]);
    const events = splitter.push(Buffer.from("\ndata: 2\r\n\r\n"));
    expect(events.map((e) => e.raw.toString())).toEqual(["data: 1\r\r\n", "data: 2\r\n\r\n"]);
    expect(splitter.push(Buffer.from("data: 3\r\r"))).toEqual([]);
    const end = splitter.end();
    expect(end.event?.raw.toString()).toBe("data: 3\r\r");
    expect(end.incomplete).toBeUndefined();
  });

  it("a body ending inside an event yields the complete ones, then throws a body-phase connection error", async () => {
    const seen: string[] = [];
    const err = await (async () => {
      for await (const event of sseEvents(iterate([Buffer.from("event: a\ndata: 1\n\nevent: b\nda"), Buffer.from("ta: {")]))) {
        seen.push(event.raw.toString());
      }
    })().catch((e: unknown) => e);
    expect(seen).toEqual(["event: a\ndata: 1\n\n"]);
    expect(err).toBeInstanceOf(UpstreamConnectionError);
    expect(err).toMatchObject({ code: "ERR_SSE_INCOMPLETE_EVENT", phase: "body" });
  });
});

describe("in-stream error events", () => {
  it("exact bytes per family", () => {
    expect(streamErrorEvent("messages", 'The provider said "no"').toString()).toBe(
      'event: error\ndata: {"type":"error","error":{"type":"api_error","message":"The provider said \\"no\\""}}\n\n',
    );
    expect(streamErrorEvent("responses", "cut short", 7).toString()).toBe(
      'event: error\ndata: {"type":"error","code":null,"message":"cut short","param":null,"sequence_number":7}\n\n',
    );
  });

  it("nextSequenceNumber follows the last event's sequence_number", () => {
    const event = (text: string) => new SseEvent(Buffer.from(text));
    expect(nextSequenceNumber(event('event: response.output_text.delta\ndata: {"type":"x","sequence_number":41}\n\n'))).toBe(42);
    expect(nextSequenceNumber(event("data: {not json\n\n"))).toBe(0);
    expect(nextSequenceNumber(event('data: {"sequence_number":"7"}\n\n'))).toBe(0);
    expect(nextSequenceNumber(undefined)).toBe(0);
  });

  async function streamingServer(first: string, family: "messages" | "responses") {
    return serve((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(first + streamErrorEvent(family, "The provider closed the connection before its response was complete.", 1).toString());
    });
  }

  it("the Anthropic SDK throws an APIError carrying the message", async () => {
    const server = await streamingServer(
      'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":0}}}\n\n',
      "messages",
    );
    const client = new Anthropic({ baseURL: server.url, apiKey: "k", maxRetries: 0 });
    const stream = await client.messages.create({ model: "m", max_tokens: 5, messages: [{ role: "user", content: "hi" }], stream: true });
    const err = await (async () => {
      for await (const _event of stream) void _event;
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect((err as Error).message).toContain("The provider closed the connection before its response was complete.");
  });

  it("the OpenAI SDK throws an APIError carrying the message", async () => {
    const server = await streamingServer(
      'event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}}\n\n',
      "responses",
    );
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "k", maxRetries: 0 });
    const stream = await client.responses.create({ model: "m", input: "hi", stream: true });
    const err = await (async () => {
      for await (const _event of stream) void _event;
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as Error).message).toBe("The provider closed the connection before its response was complete.");
  });
});

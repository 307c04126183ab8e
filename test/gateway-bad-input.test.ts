/**
 * Bad input on every gateway endpoint: bodies that are not JSON objects, bodies without a usable
 * `model`, bodies over the size cap, unknown paths and wrong methods. Each is answered with the
 * gateway's own error in the endpoint's style, never with a 5xx, and no request of this file
 * reaches a provider.
 */
import http from "node:http";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";
import type { FakeProvider } from "./support/fake-providers.ts";
import { setUpGateway, type GatewayFixture } from "./support/gateway-setup.ts";

const NOT_AN_OBJECT = "The request body must be a JSON object.";
const NO_MODEL = "The request body must name a model: 'model' is missing or is not a non-empty string.";
const STREAMING_IMAGES = "Streaming image generation is not supported.";
const MISSING_KEY = "Missing API key. Send your gateway key as 'Authorization: Bearer <key>' or in the 'x-api-key' header.";
const MAX_BODY_BYTES = 4096;
const TOO_LARGE = `The request body is too large: at most ${MAX_BODY_BYTES} bytes are accepted.`;
const noEndpoint = (path: string) => `There is no endpoint at '${path}'.`;
const notAllowed = (method: string, path: string, allowed: string) => `Method ${method} is not allowed on '${path}'. Allowed: ${allowed}.`;

type Style = "messages" | "responses" | "images";

/** The spec's status → type table; 405 and 413 are outside it and are the gateway's invalid_request_error. */
function typeFor(status: number): string {
  switch (status) {
    case 400:
    case 405:
    case 413:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 404:
      return "not_found_error";
  }
  throw new Error(`no type for ${status} in this file`);
}

function errorBody(style: Style, status: number, message: string): unknown {
  switch (style) {
    case "messages":
      return { type: "error", error: { type: typeFor(status), message } };
    case "responses":
      return { error: { message, type: typeFor(status), param: null, code: null } };
    case "images":
      return { detail: message };
  }
}

/** Every POST endpoint, at its /v1 path and below its family's prefix. */
const CALLS: readonly { path: string; style: Style }[] = [
  { path: "/v1/messages", style: "messages" },
  { path: "/anthropic/v1/messages", style: "messages" },
  { path: "/v1/messages/count_tokens", style: "messages" },
  { path: "/anthropic/v1/messages/count_tokens", style: "messages" },
  { path: "/v1/responses", style: "responses" },
  { path: "/openai/v1/responses", style: "responses" },
  { path: "/v1/chat/completions", style: "responses" },
  { path: "/openai/v1/chat/completions", style: "responses" },
  { path: "/v1/embeddings", style: "responses" },
  { path: "/openai/v1/embeddings", style: "responses" },
  { path: "/v1/images/generations", style: "images" },
  { path: "/openai/v1/images/generations", style: "images" },
];

/** The model lists; bare /v1/models answers in the responses style unless anthropic-version is sent. */
const LISTS: readonly { path: string; style: Style; headers?: Record<string, string> }[] = [
  { path: "/v1/models", style: "responses" },
  { path: "/v1/models", style: "messages", headers: { "anthropic-version": "2023-06-01" } },
  { path: "/anthropic/v1/models", style: "messages" },
  { path: "/openai/v1/models", style: "responses" },
];

let t: TestApp;
let g: GatewayFixture;
/** A second Warden whose gateway accepts bodies of at most MAX_BODY_BYTES. */
let small: TestApp;
let gs: GatewayFixture;

/** Every answer of this file, for the closing "no 5xx" check. */
const seen: { request: string; status: number }[] = [];

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: unknown;
}

interface RequestOptions {
  /** The gateway key; default the fixture's; null sends none. */
  key?: string | null;
  headers?: Record<string, string>;
  /** Sent with its Content-Length. */
  body?: string | Buffer;
  /** Sent chunked, without a Content-Length. */
  chunks?: readonly (string | Buffer)[];
  /** Declares this Content-Length but sends only `body`, then waits for the answer. */
  declaredLength?: number;
  app?: "main" | "small";
}

/** Plain node:http, so that any method, framing and byte sequence can be sent. */
function request(method: string, path: string, options: RequestOptions = {}): Promise<Reply> {
  const app = options.app === "small" ? small : t;
  const fixture = options.app === "small" ? gs : g;
  const key = options.key === undefined ? fixture.key : options.key;
  const headers: Record<string, string | number> = { ...options.headers };
  if (key !== null) headers.authorization = `Bearer ${key}`;
  if (options.body !== undefined || options.chunks !== undefined) headers["content-type"] ??= "application/json";
  if (options.declaredLength !== undefined) headers["content-length"] = options.declaredLength;
  else if (options.body !== undefined) headers["content-length"] = Buffer.byteLength(options.body);
  else if (options.chunks !== undefined) headers["transfer-encoding"] = "chunked";
  const url = new URL(app.gatewayUrl + path);
  return new Promise<Reply>((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        const status = res.statusCode ?? 0;
        seen.push({ request: `${method} ${path.length > 80 ? `${path.slice(0, 80)}…` : path}`, status });
        resolve({ status, headers: res.headers, text, json });
        if (options.declaredLength !== undefined) req.destroy();
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    if (options.chunks !== undefined) {
      for (const chunk of options.chunks) req.write(chunk);
      req.end();
    } else if (options.declaredLength !== undefined) {
      if (options.body !== undefined) req.write(options.body);
      // The rest never comes; the gateway must answer from the declared length alone.
    } else {
      req.end(options.body);
    }
  });
}

function expectError(reply: Reply, style: Style, status: number, message: string, label?: string): void {
  expect({ status: reply.status, contentType: reply.headers["content-type"], retryAfter: reply.headers["retry-after"], body: reply.json }, label).toEqual({
    status,
    contentType: "application/json",
    retryAfter: undefined,
    body: errorBody(style, status, message),
  });
}

function fakes(): FakeProvider[] {
  return [g, gs].flatMap((fixture) => (fixture ? [fixture.anthropic, fixture.openai, fixture.azure] : []));
}

function providerCalls(): number {
  return fakes().reduce((n, fake) => n + fake.requests.length, 0);
}

beforeAll(async () => {
  t = await startTestApp();
  g = await setUpGateway(t);
  small = await startTestApp({ env: { WARDEN_GATEWAY_MAX_BODY_BYTES: String(MAX_BODY_BYTES) } });
  gs = await setUpGateway(small);
});

afterAll(async () => {
  await g?.close();
  await gs?.close();
  await t?.stop();
  await small?.stop();
});

afterEach(() => {
  expect(providerCalls(), "a bad request reached a provider").toBe(0);
});

/** Bodies that are not a JSON object. */
const NOT_OBJECTS: readonly [string, string | Buffer][] = [
  ["text", "hello, gateway"],
  ["form-encoded", "model=gpt-test&input=Hi"],
  ["truncated JSON", '{"model":"gpt-test","input":"Hi"'],
  ["JSON with a trailing comma", '{"model":"gpt-test",}'],
  ["single-quoted JSON", "{'model':'gpt-test'}"],
  ["a JSON array of a valid body", '[{"model":"gpt-test","input":"Hi"}]'],
  ["an empty JSON array", "[]"],
  ["a JSON string", '"gpt-test"'],
  ["a JSON number", "42"],
  ["true", "true"],
  ["null", "null"],
  ["an empty body", ""],
  ["whitespace", " \r\n\t "],
  ["invalid UTF-8", Buffer.from([0x7b, 0xff, 0xfe, 0x7d])],
  ["two JSON objects", '{"model":"gpt-test"}{"model":"gpt-test"}'],
  ["deeply nested arrays", `${"[".repeat(100_000)}${"]".repeat(100_000)}`],
];

/** JSON objects without a usable model. */
const NO_MODELS: readonly [string, string][] = [
  ["no model", '{"input":"Hi","messages":[{"role":"user","content":"Hi"}],"prompt":"a cat","max_tokens":16}'],
  ["an empty object", "{}"],
  ["model: 123", '{"model":123,"input":"Hi"}'],
  ["model: 1.5", '{"model":1.5}'],
  ["model: true", '{"model":true}'],
  ["model: false", '{"model":false}'],
  ["model: null", '{"model":null}'],
  ["model: an empty string", '{"model":""}'],
  ["model: an array", '{"model":["gpt-test"]}'],
  ["model: an object", '{"model":{"id":"gpt-test"}}'],
  ["model under __proto__", '{"__proto__":{"model":"gpt-test"}}'],
  ["model under constructor.prototype", '{"constructor":{"prototype":{"model":"gpt-test"}}}'],
  ["a duplicate model whose last value is a number", '{"model":"gpt-test","model":123}'],
  ["Model, capitalised", '{"Model":"gpt-test"}'],
];

describe("bodies", () => {
  it("a body that is not a JSON object: 400 on every endpoint", async () => {
    for (const { path, style } of CALLS) {
      for (const [what, body] of NOT_OBJECTS) {
        expectError(await request("POST", path, { body }), style, 400, NOT_AN_OBJECT, `${path}: ${what}`);
      }
    }
  });

  it("a JSON object without a usable model: 400 on every endpoint", async () => {
    for (const { path, style } of CALLS) {
      for (const [what, body] of NO_MODELS) {
        expectError(await request("POST", path, { body }), style, 400, NO_MODEL, `${path}: ${what}`);
      }
    }
  });

  it("images: streaming is refused first, whatever else is wrong with the body", async () => {
    for (const path of ["/v1/images/generations", "/openai/v1/images/generations"]) {
      for (const body of ['{"stream":true}', '{"model":123,"stream":true}', '{"model":"gpt-image","prompt":"a cat","stream":true}']) {
        expectError(await request("POST", path, { body }), "images", 400, STREAMING_IMAGES);
      }
    }
  });

  it("the key is checked before the body", async () => {
    for (const { path, style } of CALLS) {
      expectError(await request("POST", path, { body: "not json", key: null }), style, 401, MISSING_KEY);
    }
  });
});

describe("body size", () => {
  /** A JSON object without a model, exactly `bytes` long. */
  function bodyOfSize(bytes: number): string {
    const shell = '{"input":""}';
    return `{"input":"${"x".repeat(bytes - shell.length)}"}`;
  }

  /** A valid request but for its size. */
  function validBodyOver(bytes: number): string {
    return JSON.stringify({ model: "gpt-test", input: "x".repeat(bytes), prompt: "a cat", max_tokens: 16, messages: [{ role: "user", content: "Hi" }] });
  }

  it("over WARDEN_GATEWAY_MAX_BODY_BYTES: 413 on every endpoint, with or without a Content-Length", async () => {
    expect(Buffer.byteLength(bodyOfSize(MAX_BODY_BYTES))).toBe(MAX_BODY_BYTES);
    for (const { path, style } of CALLS) {
      // At the cap, the body is read (and refused for having no model); one byte more is too large.
      expectError(await request("POST", path, { app: "small", body: bodyOfSize(MAX_BODY_BYTES) }), style, 400, NO_MODEL);
      expectError(await request("POST", path, { app: "small", body: bodyOfSize(MAX_BODY_BYTES + 1) }), style, 413, TOO_LARGE);
      expectError(await request("POST", path, { app: "small", body: validBodyOver(MAX_BODY_BYTES) }), style, 413, TOO_LARGE);
      // Chunked, without a length: refused once the count passes the cap.
      const chunk = "x".repeat(1024);
      expectError(await request("POST", path, { app: "small", chunks: ['{"model":"gpt-test","input":"', chunk, chunk, chunk, chunk, chunk, '"}'] }), style, 413, TOO_LARGE);
      // A declared length over the cap is refused without waiting for the body.
      expectError(await request("POST", path, { app: "small", declaredLength: 10_000_000, body: '{"model":"gpt-test",' }), style, 413, TOO_LARGE);
    }
  });

  it("under the default cap, a large body is not refused for its size", async () => {
    const reply = await request("POST", "/v1/responses", { body: bodyOfSize(1_000_000) });
    expectError(reply, "responses", 400, NO_MODEL);
  });
});

describe("paths and methods", () => {
  const UNKNOWN: readonly [string, Style][] = [
    ["/", "responses"],
    ["/v1", "responses"],
    ["/v1/", "responses"],
    ["/v1/completions", "responses"],
    ["/v1/responses/resp_123", "responses"],
    ["/v1/models/gpt-test", "responses"],
    ["/v2/responses", "responses"],
    ["/anthropic/v1/chat/completions", "messages"],
    ["/openai/v1", "responses"],
    ["/azure/v1/responses", "responses"],
    ["/v1/messages/", "messages"],
    ["/v1/messages/count_tokens/", "messages"],
    ["/v1/messages/batches", "messages"],
    ["/v2/messages", "messages"],
    ["/openai/v1/messages", "messages"],
    ["/anthropic/v1/responses", "messages"],
    ["/anthropic/v1/embeddings", "messages"],
    ["/anthropic/v1/images/generations", "messages"],
    ["/anthropic", "responses"],
    ["/anthropic/", "messages"],
    ["/v1/images/edits", "images"],
    ["/v1/images/generations/", "images"],
  ];

  it("an unknown path: 404, before the key check", async () => {
    for (const [path, style] of UNKNOWN) {
      for (const key of [undefined, null] as const) {
        expectError(await request("GET", path, { key }), style, 404, noEndpoint(path));
        expectError(await request("POST", path, { key, body: '{"model":"gpt-test","input":"Hi"}' }), style, 404, noEndpoint(path));
      }
    }
    // The query is not part of the path.
    expectError(await request("GET", "/v1/nothing?model=gpt-test", {}), "responses", 404, noEndpoint("/v1/nothing"));
  });

  it("a wrong method on a call: 405 with Allow: POST, before the key check", async () => {
    for (const { path, style } of CALLS) {
      for (const method of ["GET", "PUT", "PATCH", "DELETE", "OPTIONS"]) {
        for (const key of [undefined, null] as const) {
          const reply = await request(method, path, { key, body: method === "GET" || method === "OPTIONS" ? undefined : '{"model":"gpt-test","input":"Hi"}' });
          expectError(reply, style, 405, notAllowed(method, path, "POST"));
          expect(reply.headers.allow).toBe("POST");
        }
      }
      const head = await request("HEAD", path, {});
      expect({ status: head.status, allow: head.headers.allow, body: head.text }).toEqual({ status: 405, allow: "POST", body: "" });
    }
  });

  it("a wrong method on a model list: 405 with Allow: GET, in the list's style", async () => {
    for (const { path, style, headers } of LISTS) {
      for (const method of ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"]) {
        for (const key of [undefined, null] as const) {
          const reply = await request(method, path, { key, headers, body: method === "OPTIONS" ? undefined : '{"model":"gpt-test"}' });
          expectError(reply, style, 405, notAllowed(method, path, "GET"));
          expect(reply.headers.allow).toBe("GET");
        }
      }
    }
  });
});

describe("the whole run", () => {
  it("answered no request with a 5xx, and reached no provider", () => {
    expect(seen.length).toBeGreaterThan(500);
    expect(seen.filter((s) => s.status >= 500)).toEqual([]);
    for (const fake of fakes()) expect({ kind: fake.kind, requests: fake.requests.length }).toEqual({ kind: fake.kind, requests: 0 });
  });
});

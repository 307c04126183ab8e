/**
 * The gateway's error contract (docs/model-gateway.md, "Errors"), row by row: for every error the
 * exact status, `type`, message, body shape per endpoint and the presence or absence of
 * Retry-After, by raw HTTP for exactness and, for the messages and responses styles, also through
 * the official SDKs' error objects. Every refusal made before routing is checked to have reached no
 * provider.
 */
import Anthropic from "@anthropic-ai/sdk";
import { randomBytes } from "node:crypto";
import net from "node:net";
import type { AddressInfo } from "node:net";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errors as undiciErrors } from "undici";
import { asGatewayError, guardrailLoading, renderError } from "../src/gateway/dataplane/errors.ts";
import { classifyUpstreamError } from "../src/gateway/providers/errors.ts";
import { startTestApp, type TestApp } from "./support/app.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { fakeModel, WIRE_FAULTS, type FakeProvider } from "./support/fake-providers.ts";
import { setUpGateway, type GatewayFixture } from "./support/gateway-setup.ts";
import { client, type Call } from "./support/http.ts";
import { addWorkspace } from "./support/workspace.ts";

// The gateway's own messages. The spec quotes the start of each; the rest is the gateway's wording.

const CONTACT = "If this is unexpected, contact your administrator.";
const MISSING_KEY = "Missing API key. Send your gateway key as 'Authorization: Bearer <key>' or in the 'x-api-key' header.";
const INVALID_KEY = "Invalid API key.";
const DISABLED_KEY = "Invalid API key. This key is disabled.";
const STREAMING_IMAGES = "Streaming image generation is not supported.";
const NOT_AN_OBJECT = "The request body must be a JSON object.";
const NO_MODEL = "The request body must name a model: 'model' is missing or is not a non-empty string.";
const blocked = (model: string) => `The model '${model}' is not available through this gateway. ${CONTACT}`;
const notAllowed = (model: string, names: readonly string[]) =>
  `The model '${model}' is not available to this API key. Available models include: ${names.join(", ")}. ${CONTACT}`;
const AT_CAPACITY = "gateway at capacity: too many requests in flight. Retry shortly.";
const noUpstreamCapacity = (provider: string) =>
  `no upstream capacity for provider '${provider}': too many calls in flight. Retry shortly.`;
const DATABASE_UNAVAILABLE =
  "The gateway's database is unavailable: the API key could not be checked in time. Retry in a few seconds.";
const noApiKey = (provider: string) => `No API key is configured for provider '${provider}'. An administrator must store one.`;
const notConfigured = (provider: string) =>
  `Provider '${provider}' is not configured. A routing rule targets it: create the provider or change the rule's target.`;
const OPENAI_OR_AZURE = "an OpenAI or Azure OpenAI provider";
const wrongTarget = (provider: string, kind: string, serves: string, pointAt: string) =>
  `The routing rule for this request targets provider '${provider}' (${kind}), which does not serve ${serves}. Point the rule at ${pointAt}.`;
const modelBasedEmbeddings = (provider: string) =>
  `The routing rule for this request targets provider '${provider}' by model name, and embeddings cannot be routed by model. Add a routing rule that lists no models and targets an OpenAI or Azure OpenAI provider.`;
const noRoutingRule = (model: string) =>
  `No routing rule resolves requests for model '${model}'. Add a routing rule that matches it, or one that lists no models.`;
const TIMED_OUT = "The provider did not answer in time.";
const BODY_TIMED_OUT = "The provider stopped sending its response before it was complete.";
const UNREACHABLE = "The provider could not be reached or closed the connection without answering.";
const DROPPED = "The provider closed the connection before its response was complete.";

/** The spec's status → type table. */
function typeFor(status: number): string {
  if (status === 400 || status === 422) return "invalid_request_error";
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500 && status <= 599) return "api_error";
  throw new Error(`the spec's table has no type for ${status}`);
}

type Endpoint = "messages" | "responses" | "chat" | "embeddings" | "images";
type Style = "messages" | "responses" | "images";

const PATHS: Record<Endpoint, string> = {
  messages: "/v1/messages",
  responses: "/v1/responses",
  chat: "/v1/chat/completions",
  embeddings: "/v1/embeddings",
  images: "/v1/images/generations",
};
const STYLES: Record<Endpoint, Style> = { messages: "messages", responses: "responses", chat: "responses", embeddings: "responses", images: "images" };
const ENDPOINTS: readonly Endpoint[] = ["messages", "responses", "chat", "embeddings", "images"];

/** A well-formed request body for the endpoint. */
function bodyFor(endpoint: Endpoint, model: string | undefined, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const named = model === undefined ? {} : { model };
  switch (endpoint) {
    case "messages":
      return { ...named, max_tokens: 16, messages: [{ role: "user", content: "Hi" }], ...extra };
    case "responses":
      return { ...named, input: "Hi", ...extra };
    case "chat":
      return { ...named, messages: [{ role: "user", content: "Hi" }], ...extra };
    case "embeddings":
      return { ...named, input: "Hi", ...extra };
    case "images":
      return { ...named, prompt: "a cat", ...extra };
  }
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

interface Expected {
  status: number;
  message: string;
  /** Seconds; undefined: Retry-After must be absent. */
  retryAfter?: number;
}

let t: TestApp;
let g: GatewayFixture;

interface Send {
  path: string;
  method?: string;
  body?: unknown;
  raw?: string;
  /** The gateway key; default the fixture's unrestricted key; null sends none. */
  key?: string | null;
  via?: "bearer" | "x-api-key";
  headers?: Record<string, string>;
  baseUrl?: string;
}

interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

function authHeaders(key: string | null, via: "bearer" | "x-api-key" = "bearer"): Record<string, string> {
  if (key === null) return {};
  return via === "x-api-key" ? { "x-api-key": key } : { authorization: `Bearer ${key}` };
}

async function send(s: Send): Promise<Reply> {
  const headers: Record<string, string> = { ...authHeaders(s.key === undefined ? g.key : s.key, s.via), ...s.headers };
  const body = s.raw ?? (s.body === undefined ? undefined : JSON.stringify(s.body));
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch((s.baseUrl ?? t.gatewayUrl) + s.path, { method: s.method ?? (body === undefined ? "GET" : "POST"), headers, body });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

function retryAfterOf(expected: Expected): string | null {
  return expected.retryAfter === undefined ? null : String(expected.retryAfter);
}

/** Status, content type, Retry-After and the whole body, in one assertion. */
function expectError(reply: Reply, style: Style, expected: Expected): void {
  expect({
    status: reply.status,
    contentType: reply.headers.get("content-type"),
    retryAfter: reply.headers.get("retry-after"),
    // The caller sent no X-Request-ID: the gateway makes one for its logs and, as the spec says, does not return it.
    requestId: reply.headers.get("x-request-id"),
    body: reply.json,
  }).toEqual({
    status: expected.status,
    contentType: "application/json",
    retryAfter: retryAfterOf(expected),
    requestId: null,
    body: errorBody(style, expected.status, expected.message),
  });
}

// The official SDKs.

interface SdkAuth {
  key?: string | null;
  via?: "bearer" | "x-api-key";
  baseURL?: string;
}

function anthropicSdk(auth: SdkAuth = {}): Anthropic {
  const key = auth.key === undefined ? g.key : auth.key;
  const baseURL = auth.baseURL ?? t.gatewayUrl;
  if (key === null) return new Anthropic({ apiKey: null, baseURL, maxRetries: 0, defaultHeaders: { authorization: null } });
  if (auth.via === "x-api-key") return new Anthropic({ apiKey: null, baseURL, maxRetries: 0, defaultHeaders: { "x-api-key": key } });
  return new Anthropic({ apiKey: key, baseURL, maxRetries: 0 });
}

function openaiSdk(auth: SdkAuth = {}): OpenAI {
  const key = auth.key === undefined ? g.key : auth.key;
  const baseURL = auth.baseURL ?? `${t.gatewayUrl}/v1`;
  if (key === null) return new OpenAI({ apiKey: "unused", baseURL, maxRetries: 0, defaultHeaders: { authorization: null } });
  if (auth.via === "x-api-key") {
    return new OpenAI({ apiKey: "unused", baseURL, maxRetries: 0, defaultHeaders: { authorization: null, "x-api-key": key } });
  }
  return new OpenAI({ apiKey: key, baseURL, maxRetries: 0 });
}

async function thrown(work: () => Promise<unknown>): Promise<unknown> {
  let failed = false;
  let error: unknown;
  try {
    await work();
  } catch (err) {
    failed = true;
    error = err;
  }
  if (!failed) throw new Error("the call succeeded; an error was expected");
  return error;
}

async function expectAnthropicError(work: (sdk: Anthropic) => Promise<unknown>, expected: Expected, auth: SdkAuth = {}): Promise<void> {
  const err = await thrown(() => work(anthropicSdk(auth)));
  if (!(err instanceof Anthropic.APIError)) throw err;
  expect({
    status: err.status,
    error: err.error,
    type: err.type,
    apiMessage: err.apiMessage,
    retryAfter: err.headers?.get("retry-after") ?? null,
  }).toEqual({
    status: expected.status,
    error: errorBody("messages", expected.status, expected.message),
    type: typeFor(expected.status),
    apiMessage: expected.message,
    retryAfter: retryAfterOf(expected),
  });
}

async function expectOpenAIError(work: (sdk: OpenAI) => Promise<unknown>, expected: Expected, auth: SdkAuth = {}): Promise<void> {
  const err = await thrown(() => work(openaiSdk(auth)));
  if (!(err instanceof OpenAI.APIError)) throw err;
  expect({
    status: err.status,
    error: err.error,
    type: err.type,
    code: err.code,
    param: err.param,
    message: err.message,
    retryAfter: err.headers?.get("retry-after") ?? null,
  }).toEqual({
    status: expected.status,
    error: { message: expected.message, type: typeFor(expected.status), param: null, code: null },
    type: typeFor(expected.status),
    code: null,
    param: null,
    message: `${expected.status} ${expected.message}`,
    retryAfter: retryAfterOf(expected),
  });
}

/** The same request through the endpoint's SDK; images have no SDK error shape to check. */
async function expectSdkError(endpoint: Endpoint, body: unknown, expected: Expected, auth: SdkAuth = {}): Promise<void> {
  switch (endpoint) {
    case "messages":
      return expectAnthropicError((sdk) => sdk.messages.create(body as Anthropic.MessageCreateParamsNonStreaming), expected, auth);
    case "responses":
      return expectOpenAIError((sdk) => sdk.responses.create(body as OpenAI.Responses.ResponseCreateParamsNonStreaming), expected, auth);
    case "embeddings":
      return expectOpenAIError((sdk) => sdk.embeddings.create(body as OpenAI.EmbeddingCreateParams), expected, auth);
    case "images":
      return;
  }
}

function providerCalls(): number {
  return g.anthropic.requests.length + g.openai.requests.length + g.azure.requests.length;
}

interface Refusal {
  body?: unknown;
  raw?: string;
  key?: string | null;
  via?: "bearer" | "x-api-key";
  headers?: Record<string, string>;
}

/**
 * The request by raw HTTP and, for a JSON body on the messages, responses and embeddings
 * endpoints, through the SDK too. Nothing may reach a provider.
 */
async function expectRefused(endpoint: Endpoint, request: Refusal, expected: Expected): Promise<void> {
  const before = providerCalls();
  expectError(await send({ path: PATHS[endpoint], ...request }), STYLES[endpoint], expected);
  if (request.raw === undefined && request.headers === undefined) {
    await expectSdkError(endpoint, request.body, expected, { key: request.key, via: request.via });
  }
  expect(providerCalls(), "a refused request reached a provider").toBe(before);
}

/** A provider error passed through: raw and SDK, each reaching the provider exactly once. */
async function expectPassedThrough(endpoint: Endpoint, body: unknown, expected: Expected): Promise<void> {
  const before = providerCalls();
  expectError(await send({ path: PATHS[endpoint], body }), STYLES[endpoint], expected);
  expect(providerCalls()).toBe(before + 1);
  if (endpoint !== "images") {
    await expectSdkError(endpoint, body, expected);
    expect(providerCalls()).toBe(before + 2);
  }
}

async function sleep(ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms));
}

/** Bounded: 500 tries, 20 ms apart. */
async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await condition()) return;
    await sleep(20);
  }
  throw new Error(`gave up waiting for ${what}`);
}

/**
 * Starts a call that stays in flight (the fake delays its answer) and resolves once the fake has
 * it, so the gateway is surely holding it. release() aborts it.
 */
async function holdInFlight(endpoint: Endpoint, model: string, fake: FakeProvider): Promise<{ release(): Promise<void> }> {
  const before = fake.requests.length;
  const controller = new AbortController();
  const pending = fetch(t.gatewayUrl + PATHS[endpoint], {
    method: "POST",
    headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
    body: JSON.stringify(bodyFor(endpoint, model)),
    signal: controller.signal,
  })
    .then((res) => res.text())
    .catch(() => undefined);
  await until(() => fake.requests.length > before, "the held call to reach the provider");
  return {
    async release() {
      controller.abort();
      await pending;
    },
  };
}

let admin: Call;
const reload = () => t.app.gateway!.watcher.reload();

async function created(call: Call, path: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await call("POST", path, { body });
  expect(res.status, `${path}: ${res.text}`).toBe(201);
  return res.body as Record<string, unknown>;
}

async function gatewayKey(call: Call, body: Record<string, unknown> = {}): Promise<{ id: string; secret: string }> {
  const key = await created(call, "/v1/gateway/keys", body);
  return { id: key.id as string, secret: key.secret as string };
}

/** A well-formed gateway key that was never created. */
function unknownKey(): string {
  return `sk-wg-${randomBytes(32).toString("base64url")}`;
}

/** A loopback port that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Keys of two more workspaces: one whose only rule sends everything to an Anthropic provider, one with no rules. */
let anthropicOnlyKey: string;
let bareKey: string;

beforeAll(async () => {
  t = await startTestApp();
  g = await setUpGateway(t);
  admin = g.admin;

  // Setup problems and tight providers in the default workspace, by model-name globs, ahead of
  // the fixture's rules (priorities 10, 20, 100).
  await created(admin, "/v1/gateway/providers", { name: "nokey", kind: "openai", baseUrl: g.openai.url });
  await created(admin, "/v1/gateway/routing-rules", { priority: 1, models: ["nokey-*"], providerName: "nokey" });
  await created(admin, "/v1/gateway/routing-rules", { priority: 2, models: ["ghost-*"], providerName: "ghost" });
  await created(admin, "/v1/gateway/providers", { name: "openai-narrow", kind: "openai", baseUrl: g.openai.url, apiKey: g.openai.apiKey, maxInFlight: 1 });
  await created(admin, "/v1/gateway/routing-rules", { priority: 3, models: ["narrow-*"], providerName: "openai-narrow" });
  const openaiSlow = await created(admin, "/v1/gateway/providers", { name: "openai-slow", kind: "openai", baseUrl: g.openai.url, apiKey: g.openai.apiKey });
  await created(admin, "/v1/gateway/routing-rules", { priority: 4, models: ["slow-*"], providerName: "openai-slow" });
  const anthropicSlow = await created(admin, "/v1/gateway/providers", { name: "anthropic-slow", kind: "anthropic", baseUrl: g.anthropic.url, apiKey: g.anthropic.apiKey });
  await created(admin, "/v1/gateway/routing-rules", { priority: 5, models: ["slowclaude-*"], providerName: "anthropic-slow" });
  for (const id of [openaiSlow.id, anthropicSlow.id]) {
    const patched = await admin("PATCH", `/v1/gateway/providers/${String(id)}`, { body: { headersTimeoutMs: 200, bodyTimeoutMs: 200 } });
    expect(patched.body).toMatchObject({ headersTimeoutMs: 200, bodyTimeoutMs: 200 });
  }
  await created(admin, "/v1/gateway/providers", { name: "openai-down", kind: "openai", baseUrl: `http://127.0.0.1:${await closedPort()}`, apiKey: "unused" });
  await created(admin, "/v1/gateway/routing-rules", { priority: 6, models: ["down-*"], providerName: "openai-down" });
  await created(admin, "/v1/gateway/access-rules", { effect: "block", subject: "workspace", models: ["blocked-*"] });

  const anthropicOnly = await addWorkspace(t.app);
  const theirs = client(t.baseUrl, anthropicOnly.key);
  await created(theirs, "/v1/gateway/providers", { name: "claude-only", kind: "anthropic", baseUrl: g.anthropic.url, apiKey: g.anthropic.apiKey });
  await created(theirs, "/v1/gateway/routing-rules", { priority: 1, providerName: "claude-only" });
  anthropicOnlyKey = (await gatewayKey(theirs)).secret;

  const bare = await addWorkspace(t.app);
  const bareAdmin = client(t.baseUrl, bare.key);
  await created(bareAdmin, "/v1/gateway/access-rules", { effect: "block", subject: "workspace", models: ["blocked-*"] });
  bareKey = (await gatewayKey(bareAdmin)).secret;
  await reload();
});

afterAll(async () => {
  await g?.close();
  await t?.stop();
});

describe("400", () => {
  it("images with stream: right after the key check, before model access and routing", async () => {
    const streamed = (model: string | undefined) => bodyFor("images", model, { stream: true });
    const refused = { status: 400, message: STREAMING_IMAGES };
    await expectRefused("images", { body: streamed("gpt-image") }, refused);
    await expectRefused("images", { body: streamed("blocked-image") }, refused); // would be 403
    await expectRefused("images", { body: streamed("ghost-image") }, refused); // would be 503, provider missing
    await expectRefused("images", { body: streamed("claude-image") }, refused); // would be 503, wrong provider
    await expectRefused("images", { body: streamed("anything"), key: bareKey }, refused); // would be 503, no rule
    await expectRefused("images", { body: streamed(undefined) }, refused); // would be 400, no model
    // The key is checked first.
    await expectRefused("images", { body: streamed("gpt-image"), key: null }, { status: 401, message: MISSING_KEY });
    await expectRefused("images", { body: streamed("gpt-image"), key: unknownKey() }, { status: 401, message: INVALID_KEY });
    // stream: false is not streaming.
    const before = g.openai.requests.length;
    const plain = await send({ path: PATHS.images, body: bodyFor("images", "gpt-image", { stream: false }) });
    expect(plain.status).toBe(200);
    expect(g.openai.requests.length).toBe(before + 1);
  });

  it("embeddings: a body that is not a JSON object, or that names no model", async () => {
    for (const raw of ["not json at all", "[1, 2]", '[{"model":"text-embedding-test","input":"Hi"}]', '"text-embedding-test"', "null", ""]) {
      await expectRefused("embeddings", { raw }, { status: 400, message: NOT_AN_OBJECT });
    }
    await expectRefused("embeddings", { body: { input: "Hi" } }, { status: 400, message: NO_MODEL });
    await expectRefused("embeddings", { body: { model: "", input: "Hi" } }, { status: 400, message: NO_MODEL });
    await expectRefused("embeddings", { body: { model: 123, input: "Hi" } }, { status: 400, message: NO_MODEL });
  });

  it("messages and responses without a model", async () => {
    await expectRefused("messages", { body: bodyFor("messages", undefined) }, { status: 400, message: NO_MODEL });
    await expectRefused("responses", { body: bodyFor("responses", undefined) }, { status: 400, message: NO_MODEL });
    await expectRefused("messages", { raw: "[]" }, { status: 400, message: NOT_AN_OBJECT });
    await expectRefused("responses", { raw: "{not json" }, { status: 400, message: NOT_AN_OBJECT });
    await expectRefused("images", { body: bodyFor("images", undefined) }, { status: 400, message: NO_MODEL });
  });
});

describe("401", () => {
  it("a missing key, on every endpoint, in the endpoint's style", async () => {
    for (const endpoint of ENDPOINTS) {
      await expectRefused(endpoint, { body: bodyFor(endpoint, "claude-test"), key: null }, { status: 401, message: MISSING_KEY });
      // The key comes before the body.
      await expectRefused(endpoint, { raw: "not json", key: null }, { status: 401, message: MISSING_KEY });
    }
    // An Authorization header that carries no bearer token is no key either.
    await expectRefused("messages", { body: bodyFor("messages", "claude-test"), key: null, headers: { authorization: "Basic dXNlcjpwYXNz" } }, {
      status: 401,
      message: MISSING_KEY,
    });
  });

  it("an unknown key, via Authorization: Bearer and via x-api-key", async () => {
    for (const via of ["bearer", "x-api-key"] as const) {
      for (const endpoint of ENDPOINTS) {
        await expectRefused(endpoint, { body: bodyFor(endpoint, "claude-test"), key: unknownKey(), via }, { status: 401, message: INVALID_KEY });
      }
      await expectRefused("messages", { body: bodyFor("messages", "claude-test"), key: "not-even-a-gateway-key", via }, {
        status: 401,
        message: INVALID_KEY,
      });
    }
  });

  it("a disabled key, via both headers", async () => {
    const key = await gatewayKey(admin, { name: "to-disable" });
    await reload();
    for (const via of ["bearer", "x-api-key"] as const) {
      expect((await send({ path: PATHS.messages, body: bodyFor("messages", "claude-test"), key: key.secret, via })).status).toBe(200);
    }
    const patched = await admin("PATCH", `/v1/gateway/keys/${key.id}`, { body: { disabled: true } });
    expect(patched.body).toMatchObject({ disabled: true });
    await reload();
    for (const via of ["bearer", "x-api-key"] as const) {
      for (const endpoint of ENDPOINTS) {
        await expectRefused(endpoint, { body: bodyFor(endpoint, "claude-test"), key: key.secret, via }, { status: 401, message: DISABLED_KEY });
      }
    }
    expectError(await send({ path: "/v1/models", key: key.secret }), "responses", { status: 401, message: DISABLED_KEY });
  });

  it("a deleted key, via both headers", async () => {
    const key = await gatewayKey(admin, { name: "to-delete" });
    await reload();
    expect((await send({ path: PATHS.responses, body: bodyFor("responses", "gpt-test"), key: key.secret })).status).toBe(200);
    expect((await admin("DELETE", `/v1/gateway/keys/${key.id}`)).status).toBe(200);
    await reload();
    for (const via of ["bearer", "x-api-key"] as const) {
      for (const endpoint of ENDPOINTS) {
        await expectRefused(endpoint, { body: bodyFor(endpoint, "gpt-test"), key: key.secret, via }, { status: 401, message: INVALID_KEY });
      }
    }
  });
});

describe("403", () => {
  it("a block rule, on every endpoint, before routing", async () => {
    for (const endpoint of ENDPOINTS) {
      await expectRefused(endpoint, { body: bodyFor(endpoint, "blocked-model") }, { status: 403, message: blocked("blocked-model") });
    }
    // In a workspace without routing rules, the block still answers first (not 503).
    await expectRefused("messages", { body: bodyFor("messages", "blocked-model"), key: bareKey }, { status: 403, message: blocked("blocked-model") });
    // And model access comes before the body's other content: only the model is read.
    await expectRefused("responses", { body: { model: "blocked-x", input: 42 }, via: "x-api-key" }, { status: 403, message: blocked("blocked-x") });
  });

  it("an allow list on the key: at most five models named, then the closing sentence", async () => {
    const key = await gatewayKey(admin, { name: "allow-key" });
    const allowed = ["allowed-a", "allowed-b", "allowed-c", "allowed-d", "allowed-e", "allowed-f", "allowed-g"];
    await created(admin, "/v1/gateway/access-rules", { effect: "allow", subject: "key", subjectId: key.id, models: allowed });
    await reload();
    const expected = { status: 403, message: notAllowed("gpt-test", allowed.slice(0, 5)) };
    for (const endpoint of ENDPOINTS) {
      await expectRefused(endpoint, { body: bodyFor(endpoint, "gpt-test"), key: key.secret }, expected);
    }
    const names = /Available models include: (.*)\. If this/.exec(expected.message)![1]!.split(", ");
    expect(names).toHaveLength(5);
    // A model on the list goes through.
    expect((await send({ path: PATHS.responses, body: bodyFor("responses", "allowed-g"), key: key.secret })).status).toBe(200);
  });

  it("an allow list on the key's user", async () => {
    const user = await created(admin, "/v1/gateway/users", { name: "Grace", email: "grace@example.com" });
    const key = await gatewayKey(admin, { name: "grace-laptop", userId: user.id });
    await created(admin, "/v1/gateway/access-rules", { effect: "allow", subject: "user", subjectId: user.id, models: ["user-model-a", "user-model-b"] });
    await reload();
    for (const endpoint of ENDPOINTS) {
      await expectRefused(endpoint, { body: bodyFor(endpoint, "claude-test"), key: key.secret }, {
        status: 403,
        message: notAllowed("claude-test", ["user-model-a", "user-model-b"]),
      });
    }
  });

  it("an allow list on the key's group, capped at five of six", async () => {
    const group = await created(admin, "/v1/gateway/groups", { name: "interns" });
    const key = await gatewayKey(admin, { name: "intern-key", groupIds: [group.id] });
    const models = ["group-model-a", "group-model-b", "group-model-c", "group-model-d", "group-model-e", "group-model-f"];
    await created(admin, "/v1/gateway/access-rules", { effect: "allow", subject: "group", subjectId: group.id, models });
    await reload();
    for (const endpoint of ENDPOINTS) {
      await expectRefused(endpoint, { body: bodyFor(endpoint, "azure-test"), key: key.secret }, {
        status: 403,
        message: notAllowed("azure-test", models.slice(0, 5)),
      });
    }
  });
});

describe("503", () => {
  it("gateway at capacity: Retry-After 1, refused before anything else", async () => {
    const settings = await admin("PUT", "/v1/gateway/settings", { body: { maxInFlight: 1 } });
    expect(settings.body).toMatchObject({ maxInFlight: 1 });
    await reload();
    try {
      const held = await holdInFlight("messages", fakeModel("claude-hold", { delayMs: 60_000 }), g.anthropic);
      const refused = { status: 503, message: AT_CAPACITY, retryAfter: 1 };
      for (const endpoint of ENDPOINTS) await expectRefused(endpoint, { body: bodyFor(endpoint, "claude-test") }, refused);
      expectError(await send({ path: "/v1/models" }), "responses", refused);
      expectError(await send({ path: "/anthropic/v1/models" }), "messages", refused);
      await held.release();
      // The abandoned call gives its place back.
      await until(async () => (await send({ path: PATHS.messages, body: bodyFor("messages", "claude-test") })).status === 200, "capacity to return");
    } finally {
      await admin("PUT", "/v1/gateway/settings", { body: { maxInFlight: 1024 } });
      await reload();
    }
  });

  it("no upstream capacity for a provider: Retry-After 1", async () => {
    const held = await holdInFlight("responses", fakeModel("narrow-hold", { delayMs: 60_000 }), g.openai);
    const refused = { status: 503, message: noUpstreamCapacity("openai-narrow"), retryAfter: 1 };
    await expectRefused("responses", { body: bodyFor("responses", "narrow-test") }, refused);
    await expectRefused("images", { body: bodyFor("images", "narrow-test") }, refused);
    // Other providers are not affected.
    expect((await send({ path: PATHS.responses, body: bodyFor("responses", "gpt-test") })).status).toBe(200);
    await held.release();
    await until(async () => (await send({ path: PATHS.responses, body: bodyFor("responses", "narrow-test") })).status === 200, "the provider's slot to return");
  });

  it("a guardrail still loading: Retry-After 5 (rendering only)", () => {
    // Guardrails are not built yet (a later issue), so nothing can make one load; this checks the
    // error the pipeline will raise, rendered in each endpoint style.
    const cases = [
      ["pii", "The PII guardrail is still loading. Retry in a few seconds."],
      ["prompt_injection", "The prompt injection guardrail is still loading. Retry in a few seconds."],
      ["content_safety", "The content safety guardrail is still loading. Retry in a few seconds."],
    ] as const;
    for (const [kind, message] of cases) {
      expect(message).toMatch(/^The .+ guardrail is still loading/);
      for (const style of ["messages", "responses", "images"] as const) {
        const rendered = renderError(style, guardrailLoading(kind));
        expect({ status: rendered.status, headers: rendered.headers, body: JSON.parse(rendered.body) as unknown }).toEqual({
          status: 503,
          headers: { "content-type": "application/json", "retry-after": "5" },
          body: errorBody(style, 503, message),
        });
      }
    }
  });

  it("no API key configured for the provider: no Retry-After", async () => {
    const refused = { status: 503, message: noApiKey("nokey") };
    await expectRefused("responses", { body: bodyFor("responses", "nokey-test") }, refused);
    await expectRefused("images", { body: bodyFor("images", "nokey-test") }, refused);
  });

  it("a routing rule targets a provider that is not configured: no Retry-After", async () => {
    for (const endpoint of ENDPOINTS) {
      await expectRefused(endpoint, { body: bodyFor(endpoint, "ghost-test") }, { status: 503, message: notConfigured("ghost") });
    }
  });

  it("the routing rule cannot serve the endpoint: no Retry-After", async () => {
    // Embeddings and images routed to an Anthropic provider.
    await expectRefused("embeddings", { body: bodyFor("embeddings", "text-embedding-test"), key: anthropicOnlyKey }, {
      status: 503,
      message: wrongTarget("claude-only", "Anthropic", "embeddings", "an OpenAI, Azure OpenAI or OpenAI-compatible provider"),
    });
    await expectRefused("images", { body: bodyFor("images", "gpt-image"), key: anthropicOnlyKey }, {
      status: 503,
      message: wrongTarget("claude-only", "Anthropic", "image generation", OPENAI_OR_AZURE),
    });
    await expectRefused("images", { body: bodyFor("images", "claude-image") }, {
      status: 503,
      message: wrongTarget("anthropic", "Anthropic", "image generation", OPENAI_OR_AZURE),
    });
    // Embeddings matched by a model-based rule, whatever its target.
    await expectRefused("embeddings", { body: bodyFor("embeddings", "azure-embedding") }, { status: 503, message: modelBasedEmbeddings("azure") });
    await expectRefused("embeddings", { body: bodyFor("embeddings", "claude-embedding") }, { status: 503, message: modelBasedEmbeddings("anthropic") });
    // The families' own calls to the other family's provider are translated, and served.
    expect((await send({ path: PATHS.messages, body: bodyFor("messages", "gpt-test") })).status).toBe(200);
    expect((await send({ path: PATHS.messages, body: bodyFor("messages", "azure-test") })).status).toBe(200);
    expect((await send({ path: PATHS.responses, body: bodyFor("responses", "claude-test") })).status).toBe(200);
    // Embeddings through the catch-all rule to an OpenAI provider are served.
    expect((await send({ path: PATHS.embeddings, body: bodyFor("embeddings", "text-embedding-test") })).status).toBe(200);
  });

  it("no routing rule resolves the request: no Retry-After", async () => {
    for (const endpoint of ENDPOINTS) {
      await expectRefused(endpoint, { body: bodyFor(endpoint, "gpt-test"), key: bareKey }, { status: 503, message: noRoutingRule("gpt-test") });
    }
  });
});

describe("502 and 504", () => {
  it("a provider 5xx becomes 502 with the provider's message, without its Retry-After", async () => {
    await expectPassedThrough("messages", bodyFor("messages", fakeModel("claude-test", { status: 500, message: "Anthropic fell over." })), {
      status: 502,
      message: "Anthropic fell over.",
    });
    await expectPassedThrough("messages", bodyFor("messages", fakeModel("claude-test", { status: 529, message: "Overloaded", retryAfter: 30 })), {
      status: 502,
      message: "Overloaded",
    });
    await expectPassedThrough("responses", bodyFor("responses", fakeModel("gpt-test", { status: 503, message: "Try later.", retryAfter: 30, errorCode: "busy" })), {
      status: 502,
      message: "Try later.",
    });
    await expectPassedThrough("responses", bodyFor("responses", fakeModel("azure-test", { status: 500, message: "Azure fell over." })), {
      status: 502,
      message: "Azure fell over.",
    });
    await expectPassedThrough("embeddings", bodyFor("embeddings", fakeModel("text-embedding-test", { status: 500, message: "No vectors today." })), {
      status: 502,
      message: "No vectors today.",
    });
    await expectPassedThrough("images", bodyFor("images", fakeModel("gpt-image", { status: 502, message: "No pictures today." })), {
      status: 502,
      message: "No pictures today.",
    });
  });

  it("a provider that hangs up without answering: 502", async () => {
    await expectPassedThrough("messages", bodyFor("messages", fakeModel("claude-test", { hangUp: true })), { status: 502, message: UNREACHABLE });
    await expectPassedThrough("responses", bodyFor("responses", fakeModel("gpt-test", { hangUp: true })), { status: 502, message: UNREACHABLE });
    await expectPassedThrough("embeddings", bodyFor("embeddings", fakeModel("text-embedding-test", { hangUp: true })), { status: 502, message: UNREACHABLE });
    await expectPassedThrough("images", bodyFor("images", fakeModel("gpt-image", { hangUp: true })), { status: 502, message: UNREACHABLE });
  });

  it("a provider that cannot be reached: 502", async () => {
    for (const endpoint of ["responses", "images"] as const) {
      const before = providerCalls();
      expectError(await send({ path: PATHS[endpoint], body: bodyFor(endpoint, "down-test") }), STYLES[endpoint], { status: 502, message: UNREACHABLE });
      await expectSdkError(endpoint, bodyFor(endpoint, "down-test"), { status: 502, message: UNREACHABLE });
      expect(providerCalls()).toBe(before);
    }
  });

  it("a provider slower than its headersTimeoutMs: 504", async () => {
    await expectPassedThrough("messages", bodyFor("messages", fakeModel("slowclaude-test", { delayMs: 30_000 })), { status: 504, message: TIMED_OUT });
    await expectPassedThrough("responses", bodyFor("responses", fakeModel("slow-test", { delayMs: 30_000 })), { status: 504, message: TIMED_OUT });
    await expectPassedThrough("images", bodyFor("images", fakeModel("slow-image", { delayMs: 30_000 })), { status: 504, message: TIMED_OUT });
  });
});

describe("provider errors pass through", () => {
  it("a provider 4xx keeps its status and message; type from the status; code null", async () => {
    await expectPassedThrough(
      "responses",
      bodyFor("responses", fakeModel("gpt-test", { status: 400, message: "Unsupported parameter: 'temperature'.", errorType: "weird_error", errorCode: "unsupported_parameter" })),
      { status: 400, message: "Unsupported parameter: 'temperature'." },
    );
    await expectPassedThrough("messages", bodyFor("messages", fakeModel("claude-test", { status: 404, message: "model: claude-test not found", errorType: "odd_type" })), {
      status: 404,
      message: "model: claude-test not found",
    });
    await expectPassedThrough("embeddings", bodyFor("embeddings", fakeModel("text-embedding-test", { status: 422, message: "Input too long.", errorCode: "too_long" })), {
      status: 422,
      message: "Input too long.",
    });
    await expectPassedThrough("responses", bodyFor("responses", fakeModel("azure-test", { status: 404, message: "Deployment not found.", errorCode: "DeploymentNotFound" })), {
      status: 404,
      message: "Deployment not found.",
    });
    await expectPassedThrough("images", bodyFor("images", fakeModel("gpt-image", { status: 400, message: "Your prompt was rejected.", errorCode: "content_policy_violation" })), {
      status: 400,
      message: "Your prompt was rejected.",
    });
  });

  it("a provider 401 or 403 passes through as the provider's own error", async () => {
    await expectPassedThrough("messages", bodyFor("messages", fakeModel("claude-test", { status: 401, message: "invalid x-api-key" })), {
      status: 401,
      message: "invalid x-api-key",
    });
    await expectPassedThrough("responses", bodyFor("responses", fakeModel("gpt-test", { status: 403, message: "Your organization must be verified.", errorCode: "unverified" })), {
      status: 403,
      message: "Your organization must be verified.",
    });
  });

  it("a provider 429 stays 429 with its message, and its Retry-After is not forwarded", async () => {
    await expectPassedThrough("messages", bodyFor("messages", fakeModel("claude-test", { status: 429, message: "Number of request tokens has exceeded your per-minute rate limit", retryAfter: 17 })), {
      status: 429,
      message: "Number of request tokens has exceeded your per-minute rate limit",
    });
    await expectPassedThrough("responses", bodyFor("responses", fakeModel("gpt-test", { status: 429, message: "Rate limit reached for requests", retryAfter: 20, errorCode: "rate_limit_exceeded" })), {
      status: 429,
      message: "Rate limit reached for requests",
    });
    await expectPassedThrough("images", bodyFor("images", fakeModel("gpt-image", { status: 429, message: "Slow down.", retryAfter: 5 })), {
      status: 429,
      message: "Slow down.",
    });
  });
});

describe("error format per endpoint", () => {
  it("calls: messages-style on /v1/messages, responses-style on /v1/responses and /v1/embeddings, detail on images", async () => {
    const cases: [Endpoint, Style][] = [["messages", "messages"], ["responses", "responses"], ["embeddings", "responses"], ["images", "images"]];
    for (const [endpoint, style] of cases) {
      // The same request headers everywhere: the path alone decides.
      const reply = await send({ path: PATHS[endpoint], body: bodyFor(endpoint, "blocked-x"), headers: { "anthropic-version": "2023-06-01" } });
      expectError(reply, style, { status: 403, message: blocked("blocked-x") });
    }
  });

  it("calls under the family prefixes keep their style", async () => {
    await expectAnthropicError(
      (sdk) => sdk.messages.create(bodyFor("messages", "blocked-x") as unknown as Anthropic.MessageCreateParamsNonStreaming),
      { status: 403, message: blocked("blocked-x") },
      { baseURL: `${t.gatewayUrl}/anthropic` },
    );
    await expectOpenAIError(
      (sdk) => sdk.responses.create({ model: "blocked-x", input: "Hi" }),
      { status: 403, message: blocked("blocked-x") },
      { baseURL: `${t.gatewayUrl}/openai/v1` },
    );
    expectError(await send({ path: "/openai/v1/embeddings", body: bodyFor("embeddings", "blocked-x") }), "responses", { status: 403, message: blocked("blocked-x") });
    expectError(await send({ path: "/openai/v1/images/generations", body: bodyFor("images", "blocked-x") }), "images", { status: 403, message: blocked("blocked-x") });
  });

  it("GET /v1/models: messages-style under /anthropic, responses-style under /openai", async () => {
    const unauthenticated = { status: 401, message: MISSING_KEY };
    expectError(await send({ path: "/anthropic/v1/models", key: null }), "messages", unauthenticated);
    expectError(await send({ path: "/anthropic/v1/models", key: null, headers: { "anthropic-version": "2023-06-01" } }), "messages", unauthenticated);
    expectError(await send({ path: "/openai/v1/models", key: null }), "responses", unauthenticated);
    expectError(await send({ path: "/openai/v1/models", key: null, headers: { "anthropic-version": "2023-06-01" } }), "responses", unauthenticated);
    const invalid = { status: 401, message: INVALID_KEY };
    await expectAnthropicError((sdk) => sdk.models.list(), invalid, { key: unknownKey(), baseURL: `${t.gatewayUrl}/anthropic` });
    await expectOpenAIError((sdk) => sdk.models.list(), invalid, { key: unknownKey(), baseURL: `${t.gatewayUrl}/openai/v1` });
  });

  it("bare GET /v1/models: messages-style with anthropic-version, else responses-style", async () => {
    const invalid = { status: 401, message: INVALID_KEY };
    expectError(await send({ path: "/v1/models", key: unknownKey(), headers: { "anthropic-version": "2023-06-01" } }), "messages", invalid);
    expectError(await send({ path: "/v1/models", key: unknownKey() }), "responses", invalid);
    expectError(await send({ path: "/v1/models", key: null, via: "x-api-key", headers: { "anthropic-version": "2023-06-01" } }), "messages", {
      status: 401,
      message: MISSING_KEY,
    });
    // The SDKs: Anthropic's always sends anthropic-version, OpenAI's never does.
    await expectAnthropicError((sdk) => sdk.models.list(), invalid, { key: unknownKey() });
    await expectAnthropicError((sdk) => sdk.models.list(), invalid, { key: unknownKey(), via: "x-api-key" });
    await expectOpenAIError((sdk) => sdk.models.list(), invalid, { key: unknownKey() });
    await expectOpenAIError((sdk) => sdk.models.list(), { status: 401, message: MISSING_KEY }, { key: null });
  });
});

// Streaming.

interface StreamRead {
  status: number;
  contentType: string | null;
  text: string;
}

/** Reads a response to its end, or until the connection breaks (what was read is kept). */
async function readAll(url: string, init: RequestInit): Promise<StreamRead & { broken: boolean }> {
  const res = await fetch(url, init);
  const decoder = new TextDecoder();
  let text = "";
  let broken = false;
  try {
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) text += decoder.decode(chunk, { stream: true });
  } catch {
    broken = true;
  }
  return { status: res.status, contentType: res.headers.get("content-type"), text: text + decoder.decode(), broken };
}

function streamThroughGateway(endpoint: "messages" | "responses" | "chat", body: unknown): Promise<StreamRead & { broken: boolean }> {
  return readAll(t.gatewayUrl + PATHS[endpoint], {
    method: "POST",
    headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** The same bytes straight to the fake provider, which answers the same request with the same events. */
function streamDirect(fake: FakeProvider, endpoint: "messages" | "responses" | "chat", body: unknown): Promise<StreamRead & { broken: boolean }> {
  const auth: Record<string, string> =
    fake.kind === "anthropic" ? { "x-api-key": fake.apiKey, "anthropic-version": "2023-06-01" } : { authorization: `Bearer ${fake.apiKey}` };
  return readAll(fake.url + PATHS[endpoint], { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify(body) });
}

interface ParsedEvent {
  name: string | null;
  data: unknown;
}

function parseEvents(text: string): ParsedEvent[] {
  return text
    .split("\n\n")
    .filter((block) => block.trim() !== "")
    .map((block) => {
      let name: string | null = null;
      let data: unknown;
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) name = line.slice(7);
        else if (line.startsWith("data: ")) data = JSON.parse(line.slice(6));
      }
      return { name, data };
    });
}

const MESSAGES_EVENTS = ["message_start", "content_block_start", "content_block_delta", "content_block_delta", "content_block_delta"];
const RESPONSES_EVENTS = ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added", "response.output_text.delta"];

function messagesErrorEvent(message: string): string {
  return `event: error\ndata: ${JSON.stringify({ type: "error", error: { type: "api_error", message } })}\n\n`;
}

function responsesErrorEvent(message: string, sequenceNumber: number): string {
  return `event: error\ndata: ${JSON.stringify({ type: "error", code: null, message, param: null, sequence_number: sequenceNumber })}\n\n`;
}

describe("streaming", () => {
  it("an error before the first event is an ordinary error response", async () => {
    await expectPassedThrough("messages", bodyFor("messages", fakeModel("claude-test", { status: 500, message: "Stream refused." }), { stream: true }), {
      status: 502,
      message: "Stream refused.",
    });
    await expectPassedThrough("responses", bodyFor("responses", fakeModel("gpt-test", { status: 429, message: "Too many streams.", retryAfter: 3 }), { stream: true }), {
      status: 429,
      message: "Too many streams.",
    });
    // Refusals before the provider, too.
    await expectRefused("messages", { body: bodyFor("messages", "blocked-x", { stream: true }) }, { status: 403, message: blocked("blocked-x") });
    await expectRefused("responses", { body: bodyFor("responses", "ghost-x", { stream: true }) }, { status: 503, message: notConfigured("ghost") });
    // The provider sends 200 and its headers, then drops the connection before any event.
    const before = providerCalls();
    expectError(await send({ path: PATHS.messages, body: bodyFor("messages", fakeModel("claude-test", { cutAfter: 0 }), { stream: true }) }), "messages", {
      status: 502,
      message: DROPPED,
    });
    expectError(await send({ path: PATHS.responses, body: bodyFor("responses", fakeModel("gpt-test", { cutAfter: 0 }), { stream: true }) }), "responses", {
      status: 502,
      message: DROPPED,
    });
    expect(providerCalls()).toBe(before + 2);
  });

  it("messages: a cut after N events gives the N events, then the family's error event, and the stream ends", async () => {
    const body = bodyFor("messages", fakeModel("claude-test", { cutAfter: 3 }), { stream: true });
    const direct = await streamDirect(g.anthropic, "messages", body);
    expect(direct.broken).toBe(true);
    expect(parseEvents(direct.text).map((e) => e.name)).toEqual(MESSAGES_EVENTS.slice(0, 3));

    const through = await streamThroughGateway("messages", body);
    expect({ status: through.status, contentType: through.contentType, broken: through.broken }).toEqual({
      status: 200,
      contentType: "text/event-stream; charset=utf-8",
      broken: false,
    });
    expect(through.text).toBe(direct.text + messagesErrorEvent(DROPPED));

    // The SDK gets the three events, then an APIError carrying the error event.
    const seen: string[] = [];
    const err = await thrown(async () => {
      const stream = await anthropicSdk().messages.create(body as unknown as Anthropic.MessageCreateParamsStreaming);
      for await (const event of stream) seen.push(event.type);
    });
    expect(seen).toEqual(MESSAGES_EVENTS.slice(0, 3));
    if (!(err instanceof Anthropic.APIError)) throw err;
    expect({ status: err.status, error: err.error, type: err.type, apiMessage: err.apiMessage }).toEqual({
      status: undefined,
      error: { type: "error", error: { type: "api_error", message: DROPPED } },
      type: "api_error",
      apiMessage: DROPPED,
    });
  });

  it("responses: a cut after N events gives the N events, then the family's error event with the next sequence number", async () => {
    const body = bodyFor("responses", fakeModel("gpt-test", { cutAfter: 4 }), { stream: true });
    const direct = await streamDirect(g.openai, "responses", body);
    expect(direct.broken).toBe(true);
    const events = parseEvents(direct.text);
    expect(events.map((e) => e.name)).toEqual(RESPONSES_EVENTS.slice(0, 4));
    const lastSequence = (events.at(-1)!.data as { sequence_number: number }).sequence_number;
    expect(lastSequence).toBe(3);

    const through = await streamThroughGateway("responses", body);
    expect({ status: through.status, contentType: through.contentType, broken: through.broken }).toEqual({
      status: 200,
      contentType: "text/event-stream; charset=utf-8",
      broken: false,
    });
    expect(through.text).toBe(direct.text + responsesErrorEvent(DROPPED, lastSequence + 1));

    const seen: string[] = [];
    const err = await thrown(async () => {
      const stream = await openaiSdk().responses.create(body as unknown as OpenAI.Responses.ResponseCreateParamsStreaming);
      for await (const event of stream) seen.push(event.type);
    });
    expect(seen).toEqual(RESPONSES_EVENTS.slice(0, 4));
    if (!(err instanceof OpenAI.APIError)) throw err;
    expect({ status: err.status, error: err.error, message: err.message }).toEqual({
      status: undefined,
      error: { type: "error", code: null, message: DROPPED, param: null, sequence_number: 4 },
      message: DROPPED,
    });
  });

  it("chat completions: a cut after N chunks gives the N chunks, then an error chunk that the SDK raises", async () => {
    const body = bodyFor("chat", fakeModel("gpt-test", { cutAfter: 2 }), { stream: true });
    const direct = await streamDirect(g.openai, "chat", body);
    expect(direct.broken).toBe(true);
    expect(direct.text.split("\n\n").filter(Boolean)).toHaveLength(2);

    const through = await streamThroughGateway("chat", body);
    expect({ status: through.status, contentType: through.contentType, broken: through.broken }).toEqual({
      status: 200,
      contentType: "text/event-stream; charset=utf-8",
      broken: false,
    });
    const errorChunk = { error: { message: DROPPED, type: "api_error", param: null, code: null } };
    expect(through.text).toBe(`${direct.text}data: ${JSON.stringify(errorChunk)}\n\n`);

    const err = await thrown(async () => {
      const stream = await openaiSdk().chat.completions.create(body as unknown as OpenAI.Chat.ChatCompletionCreateParamsStreaming);
      for await (const chunk of stream) void chunk;
    });
    if (!(err instanceof OpenAI.APIError)) throw err;
    expect({ status: err.status, error: err.error, message: err.message }).toEqual({ status: undefined, error: errorChunk.error, message: DROPPED });
  });

  it("a translated stream cut mid-way ends with the caller's own error event", async () => {
    // An Anthropic client, a model routed to the OpenAI provider: its events arrive as Anthropic's.
    const body = bodyFor("messages", fakeModel("gpt-test", { cutAfter: 5 }), { stream: true });
    const through = await streamThroughGateway("messages", body);
    expect({ status: through.status, broken: through.broken }).toEqual({ status: 200, broken: false });
    const names = parseEvents(through.text).map((e) => e.name);
    expect(names).toEqual(["message_start", "content_block_start", "content_block_delta", "error"]);
    expect(through.text.endsWith(messagesErrorEvent(DROPPED))).toBe(true);
  });

  it("a provider that stalls mid-stream, past its bodyTimeoutMs: the stream ends with the error event", async () => {
    const messages = await streamThroughGateway("messages", bodyFor("messages", fakeModel("slowclaude-test", { stallAfter: 2 }), { stream: true }));
    expect({ status: messages.status, broken: messages.broken }).toEqual({ status: 200, broken: false });
    const messageEvents = parseEvents(messages.text);
    expect(messageEvents.map((e) => e.name)).toEqual([...MESSAGES_EVENTS.slice(0, 2), "error"]);
    expect(messages.text.endsWith(messagesErrorEvent(BODY_TIMED_OUT))).toBe(true);

    const responses = await streamThroughGateway("responses", bodyFor("responses", fakeModel("slow-test", { stallAfter: 2 }), { stream: true }));
    expect({ status: responses.status, broken: responses.broken }).toEqual({ status: 200, broken: false });
    expect(parseEvents(responses.text).map((e) => e.name)).toEqual([...RESPONSES_EVENTS.slice(0, 2), "error"]);
    expect(responses.text.endsWith(responsesErrorEvent(BODY_TIMED_OUT, 2))).toBe(true);
  });
});

describe("502: provider bytes that are not HTTP", () => {
  /** Faults that break the answer before its headers are complete. */
  const headFaults = WIRE_FAULTS.filter((fault) => fault !== "bad-chunk");
  const calls: { endpoint: Endpoint; model: string; stream: boolean }[] = [
    { endpoint: "messages", model: "claude-test", stream: false },
    { endpoint: "messages", model: "claude-test", stream: true },
    { endpoint: "responses", model: "gpt-test", stream: false },
    { endpoint: "responses", model: "gpt-test", stream: true },
    { endpoint: "responses", model: "azure-test", stream: false },
    { endpoint: "embeddings", model: "text-embedding-test", stream: false },
    { endpoint: "images", model: "gpt-image", stream: false },
  ];

  it("bytes that are not an HTTP head: 502 on every endpoint, streamed or not, in the endpoint's style", async () => {
    for (const { endpoint, model, stream } of calls) {
      for (const wire of headFaults) {
        const before = providerCalls();
        const body = bodyFor(endpoint, fakeModel(model, { wire }), stream ? { stream: true } : {});
        const reply = await send({ path: PATHS[endpoint], body });
        expect({ endpoint, stream, wire, status: reply.status }).toEqual({ endpoint, stream, wire, status: 502 });
        expectError(reply, STYLES[endpoint], { status: 502, message: UNREACHABLE });
        expect(providerCalls()).toBe(before + 1);
      }
    }
    // And through the SDKs, whose error objects carry the same.
    await expectSdkError("messages", bodyFor("messages", fakeModel("claude-test", { wire: "garbage" })), { status: 502, message: UNREACHABLE });
    await expectSdkError("responses", bodyFor("responses", fakeModel("gpt-test", { wire: "random" })), { status: 502, message: UNREACHABLE });
    await expectSdkError("embeddings", bodyFor("embeddings", fakeModel("text-embedding-test", { wire: "bad-status" })), { status: 502, message: UNREACHABLE });
  });

  it("a body that breaks after a valid head: 502 before the first event, the error event after it", async () => {
    for (const { endpoint, model } of calls.filter((c) => !c.stream)) {
      expectError(await send({ path: PATHS[endpoint], body: bodyFor(endpoint, fakeModel(model, { wire: "bad-chunk" })) }), STYLES[endpoint], {
        status: 502,
        message: DROPPED,
      });
    }
    const ping = `event: ping\ndata: ${JSON.stringify({ type: "ping" })}\n\n`;
    const messages = await streamThroughGateway("messages", bodyFor("messages", fakeModel("claude-test", { wire: "bad-chunk" }), { stream: true }));
    expect({ status: messages.status, broken: messages.broken, text: messages.text }).toEqual({
      status: 200,
      broken: false,
      text: ping + messagesErrorEvent(DROPPED),
    });
    const responses = await streamThroughGateway("responses", bodyFor("responses", fakeModel("gpt-test", { wire: "bad-chunk" }), { stream: true }));
    expect({ status: responses.status, broken: responses.broken, text: responses.text }).toEqual({
      status: 200,
      broken: false,
      text: ping + responsesErrorEvent(DROPPED, 0),
    });
  });

  it("a TLS handshake that fails (https to a plain HTTP server): 502", async () => {
    await created(admin, "/v1/gateway/providers", { name: "openai-tls", kind: "openai", baseUrl: g.openai.url.replace("http:", "https:"), apiKey: g.openai.apiKey });
    await created(admin, "/v1/gateway/routing-rules", { priority: 7, models: ["tls-*"], providerName: "openai-tls" });
    await reload();
    // Embeddings are not routed by model, so they do not reach this provider.
    for (const endpoint of ["responses", "images"] as const) {
      expectError(await send({ path: PATHS[endpoint], body: bodyFor(endpoint, "tls-test") }), STYLES[endpoint], { status: 502, message: UNREACHABLE });
    }
    expectError(await send({ path: PATHS.responses, body: bodyFor("responses", "tls-test", { stream: true }) }), "responses", {
      status: 502,
      message: UNREACHABLE,
    });
  });

  it("every kind of transport error is typed once, at the provider edge: 504 for timeouts, 502 for the rest, our own faults untyped", () => {
    const system = (code: string, syscall: string) => Object.assign(new Error(`${syscall} ${code}`), { code, syscall, errno: -1 });
    const tls = (code: string) => Object.assign(new Error(code), { code });
    const cases: [string, unknown, string | undefined][] = [
      ["HTTPParserError", new undiciErrors.HTTPParserError("Response does not match the HTTP/1.1 protocol"), "UpstreamConnectionError"],
      ["UND_ERR_SOCKET", new undiciErrors.SocketError("other side closed"), "UpstreamConnectionError"],
      ["UND_ERR_INFO", new undiciErrors.InformationalError("bad upgrade"), "UpstreamConnectionError"],
      ["UND_ERR_HEADERS_OVERFLOW", new undiciErrors.HeadersOverflowError(), "UpstreamConnectionError"],
      ["UND_ERR_RES_EXCEEDED_MAX_SIZE", new undiciErrors.ResponseExceededMaxSizeError(), "UpstreamConnectionError"],
      ["UND_ERR_RES_CONTENT_LENGTH_MISMATCH", new undiciErrors.ResponseContentLengthMismatchError(), "UpstreamConnectionError"],
      ["UND_ERR_ABORTED (not the caller's)", new undiciErrors.RequestAbortedError(), "UpstreamConnectionError"],
      ["UND_ERR_DESTROYED", new undiciErrors.ClientDestroyedError(), "UpstreamConnectionError"],
      ["UND_ERR_CLOSED", new undiciErrors.ClientClosedError(), "UpstreamConnectionError"],
      ["ECONNRESET", system("ECONNRESET", "read"), "UpstreamConnectionError"],
      ["ECONNREFUSED", system("ECONNREFUSED", "connect"), "UpstreamConnectionError"],
      ["ENOTFOUND", system("ENOTFOUND", "getaddrinfo"), "UpstreamConnectionError"],
      ["EPIPE", system("EPIPE", "write"), "UpstreamConnectionError"],
      ["DEPTH_ZERO_SELF_SIGNED_CERT", tls("DEPTH_ZERO_SELF_SIGNED_CERT"), "UpstreamConnectionError"],
      ["CERT_HAS_EXPIRED", tls("CERT_HAS_EXPIRED"), "UpstreamConnectionError"],
      ["UNABLE_TO_VERIFY_LEAF_SIGNATURE", tls("UNABLE_TO_VERIFY_LEAF_SIGNATURE"), "UpstreamConnectionError"],
      ["ERR_TLS_CERT_ALTNAME_INVALID", tls("ERR_TLS_CERT_ALTNAME_INVALID"), "UpstreamConnectionError"],
      ["ERR_SSL_WRONG_VERSION_NUMBER", tls("ERR_SSL_WRONG_VERSION_NUMBER"), "UpstreamConnectionError"],
      ["EPROTO", tls("EPROTO"), "UpstreamConnectionError"],
      ["UND_ERR_CONNECT_TIMEOUT", new undiciErrors.ConnectTimeoutError(), "UpstreamTimeoutError"],
      ["UND_ERR_HEADERS_TIMEOUT", new undiciErrors.HeadersTimeoutError(), "UpstreamTimeoutError"],
      ["ETIMEDOUT", system("ETIMEDOUT", "connect"), "UpstreamTimeoutError"],
      ["UND_ERR_BODY_TIMEOUT", new undiciErrors.BodyTimeoutError(), "UpstreamBodyTimeoutError"],
      ["UND_ERR_INVALID_ARG (ours)", new undiciErrors.InvalidArgumentError("invalid header"), undefined],
      ["UND_ERR_NOT_SUPPORTED (ours)", new undiciErrors.NotSupportedError(), undefined],
      ["a TypeError (a bug)", new TypeError("x is not a function"), undefined],
      ["a value that is not an error", "nope", undefined],
    ];
    const typed = cases.map(([name, err]) => [name, classifyUpstreamError(err)?.name]);
    expect(typed).toEqual(cases.map(([name, , expected]) => [name, expected]));
    // Each kind becomes the spec's status.
    expect(asGatewayError(classifyUpstreamError(new undiciErrors.HTTPParserError("x"))).status).toBe(502);
    expect(asGatewayError(classifyUpstreamError(new undiciErrors.HeadersTimeoutError())).status).toBe(504);
    expect(asGatewayError(classifyUpstreamError(new undiciErrors.BodyTimeoutError(), "body")).status).toBe(504);
  });
});

// The database behind a TCP proxy that can stop forwarding.

interface HoldingProxy {
  port: number;
  /** Stops forwarding: sockets are still accepted, but nothing passes until release(). */
  hold(): void;
  /** Forwards everything held, in order, and resumes. */
  release(): void;
  close(): Promise<void>;
}

async function startHoldingProxy(host: string, port: number): Promise<HoldingProxy> {
  let holding = false;
  const held: (() => void)[] = [];
  const sockets = new Set<net.Socket>();
  const later = (action: () => void) => (holding ? held.push(action) : action());
  const server = net.createServer((downstream) => {
    const upstream = net.connect(port, host);
    for (const socket of [downstream, upstream]) {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      socket.on("error", () => undefined);
    }
    const relay = (from: net.Socket, to: net.Socket) => {
      from.on("data", (chunk: Buffer) => later(() => (to.writable ? void to.write(chunk) : undefined)));
      from.on("end", () => later(() => to.end()));
      from.on("close", () => later(() => to.destroy()));
    };
    relay(downstream, upstream);
    relay(upstream, downstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    hold() {
      holding = true;
    },
    release() {
      holding = false;
      for (const action of held.splice(0)) action();
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

describe("503: the gateway's database is unavailable", () => {
  let database: TestDatabase;
  let proxy: HoldingProxy;
  let app: TestApp;
  let fixture: GatewayFixture;

  beforeAll(async () => {
    database = await createTestDatabase();
    const real = new URL(database.url);
    proxy = await startHoldingProxy(real.hostname, Number(real.port || 5432));
    const proxied = new URL(database.url);
    proxied.hostname = "127.0.0.1";
    proxied.port = String(proxy.port);
    app = await startTestApp({ database: { url: proxied.toString(), drop: database.drop }, env: { WARDEN_GATEWAY_KEY_LOOKUP_TIMEOUT_MS: "300" } });
    fixture = await setUpGateway(app);
  });

  afterAll(async () => {
    proxy?.release();
    await fixture?.close();
    await app?.stop();
    await proxy?.close();
    await database?.drop();
  });

  async function call(endpoint: Endpoint, key: string): Promise<Reply> {
    return send({ path: PATHS[endpoint], body: bodyFor(endpoint, endpoint === "messages" ? "claude-test" : "gpt-test"), key, baseUrl: app.gatewayUrl });
  }

  /** The first reply that is not the database's 503, within the bounded wait of until(). */
  async function answered(attempt: () => Promise<Reply>): Promise<Reply> {
    let reply: Reply | undefined;
    await until(async () => {
      reply = await attempt();
      return !(reply.status === 503 && reply.headers.get("retry-after") === "5");
    }, "the database to answer a key look-up");
    return reply!;
  }

  it("answers 503 with Retry-After 5 when a key the snapshot does not know cannot be checked in time", async () => {
    // With the database answering, an unknown key is looked up and refused. (Retried, bounded, in
    // case the first connection through the proxy takes longer than the 300 ms limit.)
    expectError(await answered(() => call("messages", unknownKey())), "messages", { status: 401, message: INVALID_KEY });

    proxy.hold();
    try {
      const unavailable = { status: 503, message: DATABASE_UNAVAILABLE, retryAfter: 5 };
      const calls = () => fixture.anthropic.requests.length + fixture.openai.requests.length + fixture.azure.requests.length;
      const before = calls();
      const key = unknownKey();
      for (const endpoint of ENDPOINTS) expectError(await call(endpoint, key), STYLES[endpoint], unavailable);
      expectError(await send({ path: "/v1/models", key: unknownKey(), baseUrl: app.gatewayUrl }), "responses", unavailable);
      await expectAnthropicError(
        (sdk) => sdk.messages.create({ model: "claude-test", max_tokens: 16, messages: [{ role: "user", content: "Hi" }] }),
        unavailable,
        { key: unknownKey(), baseURL: app.gatewayUrl },
      );
      await expectOpenAIError((sdk) => sdk.responses.create({ model: "gpt-test", input: "Hi" }), unavailable, { key: unknownKey(), baseURL: `${app.gatewayUrl}/v1` });
      expect(calls()).toBe(before);
      // A key the snapshot knows needs no database.
      expect((await call("responses", fixture.key)).status).toBe(200);
      // The refused key was not remembered as unknown: once the database answers, it is checked again.
      proxy.release();
      expectError(await answered(() => call("messages", key)), "messages", { status: 401, message: INVALID_KEY });
    } finally {
      proxy.release();
    }
  });
});

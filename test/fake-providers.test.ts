/**
 * The fake providers behave like the real ones on the wire: the official SDKs work against them
 * unchanged, every directive does what it says, and answers are byte-for-byte deterministic.
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  EMBEDDING_DIMENSIONS,
  FAKE_EPOCH_SECONDS,
  fakeEmbedding,
  fakeModel,
  parseFakeModel,
  startFakeProvider,
  TINY_PNG_BASE64,
  type FakeKind,
  COMPATIBLE_MODEL_IDS,
  DEFAULT_TOOL_ARGS,
  FAKE_SYSTEM_FINGERPRINT,
  type FakeProvider,
} from "./support/fake-providers.ts";

let anthropic: FakeProvider;
let openai: FakeProvider;
let azure: FakeProvider;
let compatible: FakeProvider;

beforeAll(async () => {
  [anthropic, openai, azure, compatible] = await Promise.all([
    startFakeProvider("anthropic"),
    startFakeProvider("openai"),
    startFakeProvider("azure"),
    startFakeProvider("compatible"),
  ]);
});

afterAll(async () => {
  await Promise.all([anthropic?.close(), openai?.close(), azure?.close(), compatible?.close()]);
});

beforeEach(() => {
  for (const fake of [anthropic, openai, azure, compatible]) fake.reset();
});

// ---------------------------------------------------------------------------------------------
// Helpers

function anthropicClient(fake: FakeProvider = anthropic, apiKey = fake.apiKey): Anthropic {
  return new Anthropic({ baseURL: fake.url, apiKey, maxRetries: 0 });
}

function openaiClient(fake: FakeProvider = openai, apiKey = fake.apiKey): OpenAI {
  return new OpenAI({ baseURL: `${fake.url}/v1`, apiKey, maxRetries: 0 });
}

function azureClient(fake: FakeProvider = azure, apiKey = fake.apiKey): OpenAI {
  return new OpenAI({
    baseURL: `${fake.url}/openai/v1`,
    apiKey,
    defaultQuery: { "api-version": "preview" },
    defaultHeaders: { "api-key": apiKey },
    maxRetries: 0,
  });
}

function compatibleClient(fake: FakeProvider = compatible, apiKey = fake.apiKey): OpenAI {
  return new OpenAI({ baseURL: `${fake.url}/v1`, apiKey, maxRetries: 0 });
}

function authHeaders(fake: FakeProvider): Record<string, string> {
  switch (fake.kind) {
    case "anthropic":
      return { "x-api-key": fake.apiKey };
    case "openai":
    case "compatible":
      return { authorization: `Bearer ${fake.apiKey}` };
    case "azure":
      return { "api-key": fake.apiKey };
  }
}

/** The URL of an endpoint, given as its OpenAI/Anthropic path (/v1/...). */
function endpoint(fake: FakeProvider, path: string): string {
  return fake.kind === "azure" ? `${fake.url}/openai${path}?api-version=preview` : fake.url + path;
}

interface Raw {
  status: number;
  headers: Headers;
  text: string;
}

async function post(fake: FakeProvider, path: string, body: unknown, headers: Record<string, string> = authHeaders(fake)): Promise<Raw> {
  const response = await fetch(endpoint(fake, path), {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

async function get(fake: FakeProvider, path: string, headers: Record<string, string> = authHeaders(fake)): Promise<Raw> {
  const response = await fetch(endpoint(fake, path), { headers });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** Reads a body to its end or its failure; returns what arrived either way. */
async function readAll(response: Response): Promise<{ text: string; error: unknown }> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text: text + decoder.decode(), error: undefined };
      text += decoder.decode(value, { stream: true });
    }
  } catch (error) {
    return { text, error };
  }
}

interface SseBlock {
  event: string;
  data: string;
  block: string;
}

/** Splits an SSE body into `event:` / `data:` blocks, checking the framing of each. */
function sseBlocks(text: string): SseBlock[] {
  const blocks: SseBlock[] = [];
  const pattern = /event: ([^\n]*)\ndata: ([^\n]*)\n\n/y;
  let match: RegExpExecArray | null;
  while ((match = pattern.exec(text)) !== null) blocks.push({ event: match[1]!, data: match[2]!, block: match[0] });
  expect(blocks.map((b) => b.block).join("")).toBe(text);
  return blocks;
}

function parsed(block: SseBlock): Record<string, unknown> {
  const data: unknown = JSON.parse(block.data);
  if (typeof data !== "object" || data === null) throw new Error("not an object");
  return data as Record<string, unknown>;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("Expected a rejection");
}

const anthropicBody = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  max_tokens: 64,
  messages: [{ role: "user", content: "Hi" }],
  ...extra,
});
/** Messages parameters, typed for the SDK. */
const say = (model: string) => ({ model, max_tokens: 64, messages: [{ role: "user" as const, content: "Hi" }] });
const responsesBody = (model: string, extra: Record<string, unknown> = {}) => ({ model, input: "Hi", ...extra });

const ANTHROPIC_STREAM = ["message_start", "content_block_start", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop"];
const RESPONSES_STREAM = [
  "response.created",
  "response.in_progress",
  "response.output_item.added",
  "response.content_part.added",
  "response.output_text.delta",
  "response.output_text.delta",
  "response.output_text.delta",
  "response.output_text.done",
  "response.content_part.done",
  "response.output_item.done",
  "response.completed",
];

// ---------------------------------------------------------------------------------------------

describe("fakeModel", () => {
  it("writes directives in a fixed order, after the base name", () => {
    expect(fakeModel("claude-x", { message: "Overloaded", status: 529 })).toBe("claude-x|status=529|message=Overloaded");
    expect(fakeModel("gpt-x", { cutAfter: 5, events: 20 })).toBe("gpt-x|events=20|cutAfter=5");
    expect(fakeModel("gpt-x")).toBe("gpt-x");
    expect(fakeModel("gpt-x", { hangUp: true, malformedSse: false })).toBe("gpt-x|hangUp=true");
  });

  it("escapes |, = and % in values, and the fake reads them back", () => {
    const name = fakeModel("m", { text: "a|b=c%d e" });
    expect(name).toBe("m|text=a%7Cb%3Dc%25d e");
    expect(parseFakeModel(name)).toEqual({ ok: true, base: "m", directives: { text: "a|b=c%d e" } });
  });

  it("round-trips every directive", () => {
    const directives = {
      status: 503,
      message: "Down",
      errorType: "server_error",
      errorCode: "x",
      retryAfter: 2,
      delayMs: 10,
      events: 4,
      cutAfter: 2,
      stallAfter: 3,
      malformedSse: true,
      hangUp: true,
      inputTokens: 1,
      outputTokens: 2,
      text: "t",
    };
    expect(parseFakeModel(fakeModel("base", directives))).toEqual({ ok: true, base: "base", directives });
  });

  it("refuses unknown and ill-typed directives", () => {
    expect(parseFakeModel("m|colour=red").ok).toBe(false);
    expect(parseFakeModel("m|events=many").ok).toBe(false);
    expect(parseFakeModel("m|status=200").ok).toBe(false);
    expect(parseFakeModel("m|hangUp=maybe").ok).toBe(false);
  });
});

describe("the anthropic fake through the official SDK", () => {
  it("answers messages.create with a Message", async () => {
    const message = await anthropicClient().messages.create({ model: "claude-x", max_tokens: 64, messages: [{ role: "user", content: "Hi" }] });
    expect(message.type).toBe("message");
    expect(message.role).toBe("assistant");
    expect(message.model).toBe("claude-x");
    expect(message.id).toMatch(/^msg_[0-9a-f]{24}$/);
    expect(message.content).toEqual([{ type: "text", text: "Hello from anthropic", citations: null }]);
    expect(message.stop_reason).toBe("end_turn");
    expect(message.usage.input_tokens).toBe(11);
    expect(message.usage.output_tokens).toBe(7);

    expect(anthropic.requests).toHaveLength(1);
    const [request] = anthropic.requests;
    expect(request!.method).toBe("POST");
    expect(request!.path).toBe("/v1/messages");
    // @anthropic-ai/sdk 1.x sends its apiKey as a Bearer token, not as x-api-key.
    expect(request!.headers.authorization).toBe(`Bearer ${anthropic.apiKey}`);
    expect(request!.headers["anthropic-version"]).toBeDefined();
    expect(request!.body).toMatchObject({ model: "claude-x", max_tokens: 64 });
    expect(JSON.parse(request!.raw)).toEqual(request!.body);
  });

  it("streams with messages.stream: finalMessage has the text and the usage", async () => {
    const stream = anthropicClient().messages.stream({
      model: fakeModel("claude-x", { events: 4, text: "One two three four", inputTokens: 21, outputTokens: 13 }),
      max_tokens: 64,
      messages: [{ role: "user", content: "Hi" }],
    });
    const deltas: string[] = [];
    stream.on("text", (delta) => deltas.push(delta));
    const message = await stream.finalMessage();
    expect(deltas).toHaveLength(4);
    expect(deltas.join("")).toBe("One two three four");
    expect(message.content).toEqual([{ type: "text", text: "One two three four", citations: null }]);
    expect(message.usage.input_tokens).toBe(21);
    expect(message.usage.output_tokens).toBe(13);
    expect(message.stop_reason).toBe("end_turn");
    expect(anthropic.requests[0]!.body).toMatchObject({ stream: true });
  });

  it("streams with messages.create({ stream: true })", async () => {
    const stream = await anthropicClient().messages.create({ ...say("claude-x"), stream: true });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect(types).toEqual(ANTHROPIC_STREAM);
  });

  it("lists models", async () => {
    const ids: string[] = [];
    for await (const model of anthropicClient().models.list()) ids.push(model.id);
    expect(ids).toEqual(["claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-1"]);

    const raw = await get(anthropic, "/v1/models");
    expect(raw.status).toBe(200);
    const body = JSON.parse(raw.text) as { data: Array<Record<string, unknown>>; has_more: boolean; first_id: string; last_id: string };
    expect(body.has_more).toBe(false);
    expect(body.first_id).toBe("claude-sonnet-4-5");
    expect(body.last_id).toBe("claude-opus-4-1");
    expect(body.data[0]).toMatchObject({ type: "model", id: "claude-sonnet-4-5", display_name: "Claude Sonnet 4.5", created_at: "2026-01-01T00:00:00Z" });
  });

  it("refuses a wrong key with 401 in its own format", async () => {
    const error = await rejection(anthropicClient(anthropic, "wrong").messages.create({ model: "claude-x", max_tokens: 8, messages: [{ role: "user", content: "Hi" }] }));
    expect(error).toBeInstanceOf(Anthropic.AuthenticationError);
    const raw = await post(anthropic, "/v1/messages", anthropicBody("claude-x"), { "x-api-key": "wrong" });
    expect(raw.status).toBe(401);
    expect(raw.headers.get("content-type")).toBe("application/json");
    expect(JSON.parse(raw.text)).toEqual({ type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } });
    const missing = await post(anthropic, "/v1/messages", anthropicBody("claude-x"), {});
    expect(missing.status).toBe(401);
    // The SDK sends its apiKey as a Bearer token; that works too, but every credential header must hold the key.
    expect((await post(anthropic, "/v1/messages", anthropicBody("claude-x"), { authorization: `Bearer ${anthropic.apiKey}` })).status).toBe(200);
    const leaked = await post(anthropic, "/v1/messages", anthropicBody("claude-x"), { "x-api-key": anthropic.apiKey, authorization: "Bearer sk-gateway-key" });
    expect(leaked.status).toBe(401);
    expect(JSON.parse(leaked.text)).toEqual({ type: "error", error: { type: "authentication_error", message: "Invalid bearer token" } });
  });

  it("answers unknown paths with 404 and bodies that are not JSON objects with 400, in its own format", async () => {
    const notFound = await post(anthropic, "/v1/responses", responsesBody("claude-x"));
    expect(notFound.status).toBe(404);
    expect(JSON.parse(notFound.text)).toEqual({ type: "error", error: { type: "not_found_error", message: "Not Found" } });
    expect((await get(anthropic, "/v1/messages")).status).toBe(404);

    for (const body of ["{not json", "", "[1,2]", '"text"']) {
      const bad = await post(anthropic, "/v1/messages", body);
      expect(bad.status).toBe(400);
      expect(JSON.parse(bad.text)).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
    }
    const noModel = await post(anthropic, "/v1/messages", { max_tokens: 8, messages: [] });
    expect(noModel.status).toBe(400);
  });
});

describe("the openai fake through the official SDK", () => {
  it("answers responses.create with a Response", async () => {
    const response = await openaiClient().responses.create({ model: "gpt-x", input: "Hi" });
    expect(response.object).toBe("response");
    expect(response.id).toMatch(/^resp_[0-9a-f]{48}$/);
    expect(response.status).toBe("completed");
    expect(response.model).toBe("gpt-x");
    expect(response.created_at).toBe(FAKE_EPOCH_SECONDS);
    expect(response.output_text).toBe("Hello from openai");
    expect(response.usage).toEqual({
      input_tokens: 11,
      input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
      output_tokens: 7,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 18,
    });
    const [request] = openai.requests;
    expect(request!.path).toBe("/v1/responses");
    expect(request!.headers.authorization).toBe(`Bearer ${openai.apiKey}`);
    expect(request!.body).toEqual({ model: "gpt-x", input: "Hi" });
  });

  it("streams with responses.stream and responses.create({ stream: true })", async () => {
    const stream = openaiClient().responses.stream({ model: fakeModel("gpt-x", { inputTokens: 5, outputTokens: 9 }), input: "Hi" });
    const types: string[] = [];
    const sequence: number[] = [];
    for await (const event of stream) {
      types.push(event.type);
      sequence.push(event.sequence_number);
    }
    expect(types).toEqual(RESPONSES_STREAM);
    expect(sequence).toEqual(RESPONSES_STREAM.map((_, i) => i));
    const final = await stream.finalResponse();
    expect(final.output_text).toBe("Hello from openai");
    expect(final.usage).toMatchObject({ input_tokens: 5, output_tokens: 9, total_tokens: 14 });

    const created = await openaiClient().responses.create({ model: "gpt-x", input: "Hi", stream: true });
    let text = "";
    for await (const event of created) if (event.type === "response.output_text.delta") text += event.delta;
    expect(text).toBe("Hello from openai");
  });

  it("answers embeddings.create with deterministic 8-dimension float embeddings, one per input", async () => {
    const client = openaiClient();
    // The SDK asks for base64 by default and decodes it.
    const result = await client.embeddings.create({ model: "emb-x", input: ["alpha", "beta"] });
    expect(openai.requests[0]!.body).toMatchObject({ encoding_format: "base64" });
    expect(result.object).toBe("list");
    expect(result.model).toBe("emb-x");
    expect(result.data.map((d) => d.index)).toEqual([0, 1]);
    expect(result.data.map((d) => Array.from(d.embedding))).toEqual([fakeEmbedding("alpha"), fakeEmbedding("beta")]);
    expect(result.data[0]!.embedding).toHaveLength(EMBEDDING_DIMENSIONS);
    expect(result.data[0]!.embedding).not.toEqual(result.data[1]!.embedding);
    expect(result.usage).toEqual({ prompt_tokens: 11, total_tokens: 11 });

    const floats = await client.embeddings.create({ model: "emb-x", input: "alpha", encoding_format: "float" });
    expect(floats.data[0]!.embedding).toEqual(fakeEmbedding("alpha"));
    for (const value of floats.data[0]!.embedding) expect(Math.abs(value)).toBeLessThanOrEqual(1);

    const raw = await post(openai, "/v1/embeddings", { model: "emb-x", input: "alpha" });
    expect(JSON.parse(raw.text)).toEqual({
      object: "list",
      data: [{ object: "embedding", index: 0, embedding: fakeEmbedding("alpha") }],
      model: "emb-x",
      usage: { prompt_tokens: 11, total_tokens: 11 },
    });
    expect((await post(openai, "/v1/embeddings", { model: "emb-x" })).status).toBe(400);
  });

  it("answers images.generate with a tiny PNG and a fixed `created`", async () => {
    const images = await openaiClient().images.generate({ model: "img-x", prompt: "a cat" });
    expect(images.created).toBe(FAKE_EPOCH_SECONDS);
    expect(images.data).toHaveLength(1);
    const png = Buffer.from(images.data![0]!.b64_json!, "base64");
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    expect(images.data![0]!.b64_json).toBe(TINY_PNG_BASE64);
    expect(images.usage).toMatchObject({ input_tokens: 11, output_tokens: 7, total_tokens: 18 });
    const two = await openaiClient().images.generate({ model: "img-x", prompt: "a cat", n: 2 });
    expect(two.data).toHaveLength(2);
  });

  it("lists models", async () => {
    const page = await openaiClient().models.list();
    expect(page.data.map((m) => m.id)).toEqual(["gpt-4.1", "gpt-4.1-mini", "text-embedding-3-small", "gpt-image-1"]);
    expect(page.data[0]).toEqual({ id: "gpt-4.1", object: "model", created: FAKE_EPOCH_SECONDS, owned_by: "system" });
    expect(JSON.parse((await get(openai, "/v1/models")).text)).toMatchObject({ object: "list" });
  });

  it("refuses a wrong key with 401 in its own format", async () => {
    const error = await rejection(openaiClient(openai, "wrong").responses.create({ model: "gpt-x", input: "Hi" }));
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    const raw = await post(openai, "/v1/responses", responsesBody("gpt-x"), { authorization: "Bearer wrong" });
    expect(raw.status).toBe(401);
    expect(JSON.parse(raw.text)).toEqual({
      error: { message: "Incorrect API key provided.", type: "invalid_request_error", param: null, code: "invalid_api_key" },
    });
    expect((await post(openai, "/v1/responses", responsesBody("gpt-x"), { "x-api-key": openai.apiKey })).status).toBe(401);
  });

  it("answers unknown paths with 404 and non-JSON bodies with 400, in its own format", async () => {
    for (const path of ["/v1/messages", "/v1/completions", "/openai/v1/responses"]) {
      const raw = await post(openai, path, responsesBody("gpt-x"));
      expect(raw.status).toBe(404);
      expect(JSON.parse(raw.text)).toEqual({ error: { message: `Invalid URL (POST ${path})`, type: "invalid_request_error", param: null, code: null } });
    }
    for (const path of ["/v1/responses", "/v1/embeddings", "/v1/images/generations"]) {
      const raw = await post(openai, path, "{oops");
      expect(raw.status).toBe(400);
      expect(JSON.parse(raw.text)).toMatchObject({ error: { type: "invalid_request_error", param: null, code: null } });
    }
  });
});

describe("the azure fake through the official OpenAI SDK", () => {
  it("serves responses, streams, embeddings, images and models under /openai/v1 with api-version and api-key", async () => {
    const client = azureClient();
    const response = await client.responses.create({ model: "gpt-az", input: "Hi" });
    expect(response.output_text).toBe("Hello from azure");
    expect(response.model).toBe("gpt-az");

    const stream = client.responses.stream({ model: "gpt-az", input: "Hi" });
    expect((await stream.finalResponse()).output_text).toBe("Hello from azure");

    const embeddings = await client.embeddings.create({ model: "emb-az", input: "alpha" });
    expect(Array.from(embeddings.data[0]!.embedding)).toEqual(fakeEmbedding("alpha"));

    const images = await client.images.generate({ model: "img-az", prompt: "a cat" });
    expect(images.data![0]!.b64_json).toBe(TINY_PNG_BASE64);

    const models = await client.models.list();
    expect(models.data.length).toBeGreaterThan(0);

    expect(azure.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      "POST /openai/v1/responses",
      "POST /openai/v1/responses",
      "POST /openai/v1/embeddings",
      "POST /openai/v1/images/generations",
      "GET /openai/v1/models",
    ]);
    for (const request of azure.requests) {
      expect(request.query.get("api-version")).toBe("preview");
      expect(request.headers["api-key"]).toBe(azure.apiKey);
    }
  });

  it("wants the api-version query parameter, the api-key header and the /openai prefix", async () => {
    const body = JSON.stringify(responsesBody("gpt-az"));
    const headers = { "content-type": "application/json", "api-key": azure.apiKey };
    const noVersion = await fetch(`${azure.url}/openai/v1/responses`, { method: "POST", headers, body });
    expect(noVersion.status).toBe(400);
    expect(await noVersion.json()).toEqual({
      error: { message: "Missing required query parameter 'api-version'.", type: "invalid_request_error", param: null, code: "missing_api_version" },
    });

    const wrongKey = await post(azure, "/v1/responses", responsesBody("gpt-az"), { "api-key": "wrong" });
    expect(wrongKey.status).toBe(401);
    expect(JSON.parse(wrongKey.text)).toMatchObject({ error: { type: "invalid_request_error", param: null, code: "401" } });
    // Bearer auth alone is not enough, and a Bearer token next to api-key must hold the key too.
    expect((await post(azure, "/v1/responses", responsesBody("gpt-az"), { authorization: `Bearer ${azure.apiKey}` })).status).toBe(401);
    expect((await post(azure, "/v1/responses", responsesBody("gpt-az"), { "api-key": azure.apiKey, authorization: "Bearer other" })).status).toBe(401);
    expect((await post(azure, "/v1/responses", responsesBody("gpt-az"), { "api-key": azure.apiKey })).status).toBe(200);

    const rootPath = await fetch(`${azure.url}/v1/responses?api-version=preview`, { method: "POST", headers, body });
    expect(rootPath.status).toBe(404);
    expect(await rootPath.json()).toMatchObject({ error: { type: "invalid_request_error", param: null, code: null } });

    const error = await rejection(azureClient(azure, "wrong").responses.create({ model: "gpt-az", input: "Hi" }));
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
  });
});

describe("the wire format of streams", () => {
  it("anthropic: event: <type>\\ndata: <json>\\n\\n, in the real order, usage in message_start and message_delta", async () => {
    const raw = await post(anthropic, "/v1/messages", anthropicBody(fakeModel("claude-x", { inputTokens: 30, outputTokens: 40 }), { stream: true }));
    expect(raw.status).toBe(200);
    expect(raw.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const blocks = sseBlocks(raw.text);
    expect(blocks.map((b) => b.event)).toEqual(ANTHROPIC_STREAM);
    for (const block of blocks) {
      expect(parsed(block).type).toBe(block.event);
      expect(block.block).toBe(`event: ${block.event}\ndata: ${JSON.stringify(JSON.parse(block.data))}\n\n`);
    }
    const start = parsed(blocks[0]!) as { message: { model: string; usage: { input_tokens: number; output_tokens: number } } };
    expect(start.message.model).toBe("claude-x|inputTokens=30|outputTokens=40");
    expect(start.message.usage.input_tokens).toBe(30);
    const delta = parsed(blocks.at(-2)!) as { usage: { output_tokens: number }; delta: { stop_reason: string } };
    expect(delta.usage.output_tokens).toBe(40);
    expect(delta.delta.stop_reason).toBe("end_turn");
    expect(raw.text.endsWith('event: message_stop\ndata: {"type":"message_stop"}\n\n')).toBe(true);
  });

  it("openai and azure: the real event sequence with sequence_number, usage in response.completed", async () => {
    for (const fake of [openai, azure]) {
      const raw = await post(fake, "/v1/responses", responsesBody(fakeModel("gpt-x", { inputTokens: 3, outputTokens: 4 }), { stream: true }));
      expect(raw.status).toBe(200);
      expect(raw.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
      const blocks = sseBlocks(raw.text);
      expect(blocks.map((b) => b.event)).toEqual(RESPONSES_STREAM);
      blocks.forEach((block, i) => {
        expect(parsed(block)).toMatchObject({ type: block.event, sequence_number: i });
      });
      const created = parsed(blocks[0]!) as { response: { status: string; usage: unknown; output: unknown[] } };
      expect(created.response).toMatchObject({ status: "in_progress", usage: null, output: [] });
      const completed = parsed(blocks.at(-1)!) as { response: { status: string; usage: unknown; model: string } };
      expect(completed.response.status).toBe("completed");
      expect(completed.response.model).toBe("gpt-x|inputTokens=3|outputTokens=4");
      expect(completed.response.usage).toEqual({
        input_tokens: 3,
        input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
        output_tokens: 4,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 7,
      });
      expect(raw.text).not.toContain("[DONE]");
    }
  });
});

describe("directives", () => {
  it("status + message reach the anthropic SDK's error; Retry-After is sent", async () => {
    const model = fakeModel("claude-x", { status: 529, message: "Overloaded", retryAfter: 7 });
    const error = await rejection(anthropicClient().messages.create({ model, max_tokens: 8, messages: [{ role: "user", content: "Hi" }] }));
    expect(error).toBeInstanceOf(Anthropic.APIError);
    const apiError = error as InstanceType<typeof Anthropic.APIError>;
    expect(apiError.status).toBe(529);
    expect(apiError.apiMessage).toBe("Overloaded");
    expect(apiError.type).toBe("overloaded_error");
    expect(apiError.message).toContain("Overloaded");
    expect(apiError.headers?.get("retry-after")).toBe("7");

    const raw = await post(anthropic, "/v1/messages", anthropicBody(model));
    expect(raw.status).toBe(529);
    expect(raw.headers.get("retry-after")).toBe("7");
    expect(JSON.parse(raw.text)).toEqual({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } });

    const typed = await post(anthropic, "/v1/messages", anthropicBody(fakeModel("claude-x", { status: 400, errorType: "custom_error", message: "No" })));
    expect(JSON.parse(typed.text)).toEqual({ type: "error", error: { type: "custom_error", message: "No" } });
    const plain = await post(anthropic, "/v1/messages", anthropicBody(fakeModel("claude-x", { status: 500 })));
    expect(plain.headers.get("retry-after")).toBeNull();
    expect(JSON.parse(plain.text)).toEqual({ type: "error", error: { type: "api_error", message: "Fake anthropic error 500" } });
  });

  it("status + message + errorCode reach the openai SDK's error, on every endpoint, and on azure", async () => {
    const model = fakeModel("gpt-x", { status: 429, message: "Slow down", errorCode: "rate_limit_exceeded", retryAfter: 3 });
    for (const client of [openaiClient(), azureClient()]) {
      for (const call of [
        () => client.responses.create({ model, input: "Hi" }),
        () => client.responses.create({ model, input: "Hi", stream: true }),
        () => client.embeddings.create({ model, input: "Hi" }),
        () => client.images.generate({ model, prompt: "Hi" }),
      ]) {
        const error = await rejection(call());
        expect(error).toBeInstanceOf(OpenAI.RateLimitError);
        const apiError = error as InstanceType<typeof OpenAI.APIError>;
        expect(apiError.status).toBe(429);
        expect(apiError.message).toContain("Slow down");
        expect(apiError.code).toBe("rate_limit_exceeded");
        expect(apiError.type).toBe("requests");
        expect(apiError.headers?.get("retry-after")).toBe("3");
      }
    }
    const raw = await post(openai, "/v1/responses", responsesBody(fakeModel("gpt-x", { status: 503, message: "Down", errorType: "overloaded" })));
    expect(raw.status).toBe(503);
    expect(JSON.parse(raw.text)).toEqual({ error: { message: "Down", type: "overloaded", param: null, code: null } });
  });

  it("an error status comes as a JSON error even when a stream was asked for", async () => {
    const raw = await post(anthropic, "/v1/messages", anthropicBody(fakeModel("claude-x", { status: 500, message: "Boom" }), { stream: true }));
    expect(raw.status).toBe(500);
    expect(raw.headers.get("content-type")).toBe("application/json");
    expect(JSON.parse(raw.text)).toEqual({ type: "error", error: { type: "api_error", message: "Boom" } });
  });

  it("events and text shape the deltas", async () => {
    const text = "a|b=c, d";
    const raw = await post(openai, "/v1/responses", responsesBody(fakeModel("gpt-x", { events: 5, text }), { stream: true }));
    const deltas = sseBlocks(raw.text)
      .filter((b) => b.event === "response.output_text.delta")
      .map((b) => (parsed(b) as { delta: string }).delta);
    expect(deltas).toHaveLength(5);
    expect(deltas.join("")).toBe(text);

    const many = await post(anthropic, "/v1/messages", anthropicBody(fakeModel("claude-x", { events: 20 }), { stream: true }));
    expect(sseBlocks(many.text).filter((b) => b.event === "content_block_delta")).toHaveLength(20);

    const message = await anthropicClient().messages.create(say(fakeModel("claude-x", { text })));
    expect(message.content[0]).toMatchObject({ type: "text", text });
  });

  it("cutAfter destroys the socket after N events", async () => {
    // Raw: exactly N events arrive, then the body fails.
    for (const [fake, path, body] of [
      [anthropic, "/v1/messages", anthropicBody(fakeModel("claude-x", { cutAfter: 3 }), { stream: true })],
      [openai, "/v1/responses", responsesBody(fakeModel("gpt-x", { events: 20, cutAfter: 5 }), { stream: true })],
      [azure, "/v1/responses", responsesBody(fakeModel("gpt-x", { cutAfter: 0 }), { stream: true })],
    ] as const) {
      const response = await fetch(endpoint(fake, path), { method: "POST", headers: { "content-type": "application/json", ...authHeaders(fake) }, body: JSON.stringify(body) });
      expect(response.status).toBe(200);
      const { text, error } = await readAll(response);
      expect(error).toBeInstanceOf(Error);
      const expected = fake.kind === "anthropic" ? 3 : fake.kind === "openai" ? 5 : 0;
      expect(sseBlocks(text)).toHaveLength(expected);
    }

    // Through the SDKs: the stream fails before its end.
    const anthropicStream = anthropicClient().messages.stream(say(fakeModel("claude-x", { cutAfter: 3 })));
    const deltas: string[] = [];
    anthropicStream.on("text", (delta) => deltas.push(delta));
    expect(await rejection(anthropicStream.finalMessage())).toBeInstanceOf(Error);
    expect(deltas).toHaveLength(1);

    const openaiStream = await openaiClient().responses.create({ model: fakeModel("gpt-x", { events: 20, cutAfter: 6 }), input: "Hi", stream: true });
    const seen: string[] = [];
    const error = await rejection(
      (async () => {
        for await (const event of openaiStream) seen.push(event.type);
      })(),
    );
    expect(error).toBeInstanceOf(Error);
    expect(seen).toEqual(RESPONSES_STREAM.slice(0, 6));
  });

  it("a cutAfter at or past the end of the stream lets it finish", async () => {
    const raw = await post(anthropic, "/v1/messages", anthropicBody(fakeModel("claude-x", { cutAfter: 8 }), { stream: true }));
    expect(sseBlocks(raw.text).map((b) => b.event)).toEqual(ANTHROPIC_STREAM);
  });

  it("stallAfter sends N events, then nothing, and keeps the socket open until close()", async () => {
    const fake = await startFakeProvider("openai");
    try {
      const response = await fetch(`${fake.url}/v1/responses`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${fake.apiKey}` },
        body: JSON.stringify(responsesBody(fakeModel("gpt-x", { stallAfter: 4 }), { stream: true })),
      });
      expect(response.status).toBe(200);
      const reader = response.body!.getReader();
      const decoder = new TextDecoder();
      let text = "";
      while (sseBlocksLoose(text) < 4) {
        const { done, value } = await reader.read();
        expect(done).toBe(false);
        text += decoder.decode(value, { stream: true });
      }
      expect(sseBlocks(text).map((b) => b.event)).toEqual(RESPONSES_STREAM.slice(0, 4));

      // Nothing more comes while the fake is open.
      const next = reader.read().then(
        (r) => (r.done ? "ended" : "data"),
        () => "failed",
      );
      const quiet = await Promise.race([next, new Promise<string>((resolve) => setTimeout(() => resolve("quiet"), 300))]);
      expect(quiet).toBe("quiet");

      // close() destroys the socket: the read fails, and close() does not wait for the stream.
      await fake.close();
      expect(await next).toBe("failed");
    } finally {
      await fake.close();
    }
  });

  it("malformedSse makes the second event unparseable", async () => {
    for (const [fake, path, body] of [
      [anthropic, "/v1/messages", anthropicBody(fakeModel("claude-x", { malformedSse: true }), { stream: true })],
      [openai, "/v1/responses", responsesBody(fakeModel("gpt-x", { malformedSse: true }), { stream: true })],
    ] as const) {
      const raw = await post(fake, path, body);
      expect(raw.status).toBe(200);
      const blocks = sseBlocks(raw.text);
      expect(blocks).toHaveLength(fake.kind === "anthropic" ? ANTHROPIC_STREAM.length : RESPONSES_STREAM.length);
      expect(() => JSON.parse(blocks[1]!.data)).toThrow();
      for (const block of [blocks[0]!, ...blocks.slice(2)]) expect(() => JSON.parse(block.data)).not.toThrow();
    }

    const anthropicStream = anthropicClient().messages.stream(say(fakeModel("claude-x", { malformedSse: true })));
    expect(await rejection(anthropicStream.finalMessage())).toBeInstanceOf(Error);
    const openaiStream = openaiClient().responses.stream({ model: fakeModel("gpt-x", { malformedSse: true }), input: "Hi" });
    const error = await rejection(openaiStream.finalResponse());
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/malformed/);
  });

  it("delayMs holds the response headers back, then answers as usual", async () => {
    // Behaviour, not a stopwatch: a long delay is still pending once the fake has the request.
    const abort = new AbortController();
    let settled = false;
    const before = openai.requests.length;
    const pending = fetch(endpoint(openai, "/v1/responses"), {
      method: "POST",
      headers: { "content-type": "application/json", ...authHeaders(openai) },
      body: JSON.stringify(responsesBody(fakeModel("gpt-x", { delayMs: 60_000 }))),
      signal: abort.signal,
    }).finally(() => (settled = true));
    for (let i = 0; i < 200 && openai.requests.length === before; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(openai.requests.length).toBe(before + 1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    abort.abort();
    await rejection(pending);

    const message = await anthropicClient().messages.create(say(fakeModel("claude-x", { delayMs: 20 })));
    expect(message.type).toBe("message");
    const error = await rejection(openaiClient().embeddings.create({ model: fakeModel("emb-x", { delayMs: 20, status: 500 }), input: "x" }));
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
  });

  it("hangUp closes the connection without an answer", async () => {
    const raw = await rejection(post(openai, "/v1/responses", responsesBody(fakeModel("gpt-x", { hangUp: true }))));
    expect(raw).toBeInstanceOf(TypeError);
    expect(await rejection(anthropicClient().messages.create(say(fakeModel("claude-x", { hangUp: true }))))).toBeInstanceOf(
      Anthropic.APIConnectionError,
    );
    expect(await rejection(azureClient().responses.create({ model: fakeModel("gpt-x", { hangUp: true }), input: "Hi" }))).toBeInstanceOf(OpenAI.APIConnectionError);
    // The request was received and recorded all the same.
    expect(openai.requests).toHaveLength(1);
  });

  it("a directive the fake does not know is a 400", async () => {
    const raw = await post(openai, "/v1/responses", responsesBody("gpt-x|colour=red"));
    expect(raw.status).toBe(400);
    expect(JSON.parse(raw.text).error.message).toContain("colour");
  });
});

describe("determinism", () => {
  const cases: Array<[FakeKind, string, (model: string) => unknown]> = [
    ["anthropic", "/v1/messages", (m) => anthropicBody(m)],
    ["anthropic", "/v1/messages", (m) => anthropicBody(m, { stream: true })],
    ["openai", "/v1/responses", (m) => responsesBody(m)],
    ["openai", "/v1/responses", (m) => responsesBody(m, { stream: true })],
    ["openai", "/v1/embeddings", (m) => ({ model: m, input: ["a", "b"] })],
    ["openai", "/v1/images/generations", (m) => ({ model: m, prompt: "a cat" })],
    ["azure", "/v1/responses", (m) => responsesBody(m, { stream: true })],
    ["azure", "/v1/embeddings", (m) => ({ model: m, input: "a", encoding_format: "base64" })],
  ];

  function fakeOf(kind: FakeKind): FakeProvider {
    return kind === "anthropic" ? anthropic : kind === "openai" ? openai : azure;
  }

  it.each(cases)("%s %s: the same request gives the same bytes, and the model echoes what was sent", async (kind, path, makeBody) => {
    const fake = fakeOf(kind);
    const model = fakeModel("model-x", { events: 2 });
    const first = await post(fake, path, makeBody(model));
    const second = await post(fake, path, makeBody(model));
    expect(first.status).toBe(200);
    expect(second.text).toBe(first.text);
    expect([...second.headers]).toEqual([...first.headers]);
    expect(first.headers.get("date")).toBeNull();
    if (!path.includes("images")) expect(first.text).toContain(JSON.stringify(model));
  });

  it("the same request on a fresh fake gives the same bytes; a different request gives different ids", async () => {
    const fresh = await startFakeProvider("openai");
    try {
      const body = responsesBody("gpt-x", { stream: true });
      const here = await post(openai, "/v1/responses", body);
      const there = await post(fresh, "/v1/responses", body);
      expect(there.text).toBe(here.text);
    } finally {
      await fresh.close();
    }
    const one = JSON.parse((await post(anthropic, "/v1/messages", anthropicBody("claude-x"))).text) as { id: string };
    // Formatting does not count: the same request re-serialised (other key order, whitespace) gets the same id.
    const { messages, max_tokens, model } = anthropicBody("claude-x");
    const reformatted = JSON.parse((await post(anthropic, "/v1/messages", JSON.stringify({ messages, model, max_tokens }, null, 2))).text) as { id: string };
    expect(reformatted.id).toBe(one.id);
    const other = JSON.parse((await post(anthropic, "/v1/messages", { ...anthropicBody("claude-x"), max_tokens: 65 })).text) as { id: string };
    expect(one.id).not.toBe(other.id);
  });

  it("models lists are fixed", async () => {
    for (const fake of [anthropic, openai, azure]) {
      expect((await get(fake, "/v1/models")).text).toBe((await get(fake, "/v1/models")).text);
    }
  });
});

describe("lifecycle", () => {
  it("records every request in order, including refused ones, and reset() clears them", async () => {
    await post(openai, "/v1/responses", responsesBody("gpt-x"));
    await post(openai, "/v1/nowhere", "plain text", { authorization: "Bearer wrong", "x-extra": "1" });
    await fetch(`${openai.url}/v1/models?limit=2`, { headers: authHeaders(openai) });
    expect(openai.requests.map((r) => `${r.method} ${r.path}`)).toEqual(["POST /v1/responses", "POST /v1/nowhere", "GET /v1/models"]);
    const refused = openai.requests[1]!;
    expect(refused.body).toBeUndefined();
    expect(refused.raw).toBe("plain text");
    expect(refused.headers["x-extra"]).toBe("1");
    expect(openai.requests[2]!.query.get("limit")).toBe("2");
    expect(openai.requests[2]!.raw).toBe("");
    openai.reset();
    expect(openai.requests).toEqual([]);
  });

  it("close() ends pending delays and open sockets, leaves no timer behind, and is idempotent", async () => {
    const timeouts = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    const fake = await startFakeProvider("anthropic", { apiKey: "my-key" });
    expect(fake.apiKey).toBe("my-key");
    expect(fake.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const before = timeouts();
    const pending = post(fake, "/v1/messages", anthropicBody(fakeModel("claude-x", { delayMs: 60_000 })));
    while (fake.requests.length === 0) await new Promise((resolve) => setImmediate(resolve));
    expect(timeouts()).toBeGreaterThan(before);
    await Promise.all([fake.close(), fake.close()]);
    expect(await rejection(pending)).toBeInstanceOf(TypeError);
    expect(timeouts()).toBeLessThanOrEqual(before);
    expect(await rejection(fetch(`${fake.url}/v1/models`))).toBeInstanceOf(TypeError);
  });
});

/** How many complete SSE blocks the text holds so far. */
function sseBlocksLoose(text: string): number {
  return text.split("\n\n").length - 1;
}

// ---------------------------------------------------------------------------------------------
// Chat completions, the compatible kind, tool calls, images and request validation.

const chatBody = (model: string, extra: Record<string, unknown> = {}) => ({ model, messages: [{ role: "user", content: "Hi" }], ...extra });
/** Chat parameters, typed for the SDK. */
const ask = (model: string) => ({ model, messages: [{ role: "user" as const, content: "Hi" }] });

const WEATHER_SCHEMA = { type: "object" as const, properties: { city: { type: "string" } }, required: ["city"] };
const anthropicTools = [
  { name: "get_weather", description: "The weather in a city", input_schema: WEATHER_SCHEMA },
  { name: "get_time", input_schema: { type: "object" } },
] satisfies Anthropic.Tool[];
const responsesTools = [
  { type: "function", name: "get_weather", description: "The weather in a city", parameters: WEATHER_SCHEMA, strict: false },
  { type: "function", name: "get_time", parameters: null, strict: null },
] satisfies OpenAI.Responses.FunctionTool[];
const chatTools = [
  { type: "function", function: { name: "get_weather", description: "The weather in a city", parameters: WEATHER_SCHEMA } },
  { type: "function", function: { name: "get_time" } },
] satisfies OpenAI.ChatCompletionFunctionTool[];

/** Splits a chat completions stream into its `data:` payloads, checking the framing; the last is [DONE]. */
function dataBlocks(text: string): string[] {
  const blocks: string[] = [];
  const pattern = /data: ([^\n]*)\n\n/y;
  let match: RegExpExecArray | null;
  let framed = "";
  while ((match = pattern.exec(text)) !== null) {
    blocks.push(match[1]!);
    framed += match[0];
  }
  expect(framed).toBe(text);
  return blocks;
}

/** The chunks of a complete chat completions stream (ending in data: [DONE]). */
function chunksOf(text: string): Record<string, unknown>[] {
  const blocks = dataBlocks(text);
  expect(blocks.at(-1)).toBe("[DONE]");
  return blocks.slice(0, -1).map((b) => JSON.parse(b) as Record<string, unknown>);
}

const CHAT_USAGE = {
  prompt_tokens: 11,
  completion_tokens: 7,
  total_tokens: 18,
  prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
} satisfies OpenAI.CompletionUsage;

describe("chat completions on the openai and azure fakes", () => {
  it("answers chat.completions.create with a chat.completion, exactly", async () => {
    const completion = await openaiClient().chat.completions.create(ask("gpt-x"));
    expect(completion.id).toMatch(/^chatcmpl-[0-9a-f]{32}$/);
    const expected: OpenAI.ChatCompletion = {
      id: completion.id,
      object: "chat.completion",
      created: FAKE_EPOCH_SECONDS,
      model: "gpt-x",
      choices: [{ index: 0, message: { role: "assistant", content: "Hello from openai", refusal: null, annotations: [] }, logprobs: null, finish_reason: "stop" }],
      usage: CHAT_USAGE,
      service_tier: "default",
      system_fingerprint: FAKE_SYSTEM_FINGERPRINT,
    };
    expect(completion).toEqual(expected);
    // The raw body is the same, key order included.
    const raw = await post(openai, "/v1/chat/completions", ask("gpt-x"));
    expect(raw.status).toBe(200);
    expect(raw.text).toBe(JSON.stringify(expected));
    expect(openai.requests.map((r) => `${r.method} ${r.path}`)).toEqual(["POST /v1/chat/completions", "POST /v1/chat/completions"]);
  });

  it("streams chunks as OpenAI does: role chunk, content deltas, finish chunk, usage chunk when asked, then [DONE]", async () => {
    const model = fakeModel("gpt-x", { text: "One two", events: 2, inputTokens: 4, outputTokens: 5 });
    const raw = await post(openai, "/v1/chat/completions", chatBody(model, { stream: true, stream_options: { include_usage: true } }));
    expect(raw.status).toBe(200);
    expect(raw.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const chunks = chunksOf(raw.text);
    const id = chunks[0]!.id as string;
    expect(id).toMatch(/^chatcmpl-[0-9a-f]{32}$/);
    const head = { id, object: "chat.completion.chunk", created: FAKE_EPOCH_SECONDS, model, service_tier: "default", system_fingerprint: FAKE_SYSTEM_FINGERPRINT } as const;
    const choice = (delta: OpenAI.ChatCompletionChunk.Choice.Delta, finish_reason: OpenAI.ChatCompletionChunk.Choice["finish_reason"] = null) => ({
      index: 0,
      delta,
      logprobs: null,
      finish_reason,
    });
    const expected: OpenAI.ChatCompletionChunk[] = [
      { ...head, choices: [choice({ role: "assistant", content: "", refusal: null })], usage: null },
      { ...head, choices: [choice({ content: "One" })], usage: null },
      { ...head, choices: [choice({ content: " two" })], usage: null },
      { ...head, choices: [choice({}, "stop")], usage: null },
      { ...head, choices: [], usage: { ...CHAT_USAGE, prompt_tokens: 4, completion_tokens: 5, total_tokens: 9 } },
    ];
    expect(chunks).toEqual(expected);
    expect(raw.text).toBe(`${expected.map((c) => `data: ${JSON.stringify(c)}\n\n`).join("")}data: [DONE]\n\n`);

    // Without include_usage: no usage chunk, and no usage key at all.
    const plain = chunksOf((await post(openai, "/v1/chat/completions", chatBody(model, { stream: true }))).text);
    expect(plain).toHaveLength(4);
    for (const chunk of plain) expect(chunk).not.toHaveProperty("usage");
  });

  it("streams through the SDK: create({ stream: true }) and chat.completions.stream()", async () => {
    const client = openaiClient();
    const stream = await client.chat.completions.create({ ...ask(fakeModel("gpt-x", { events: 4 })), stream: true, stream_options: { include_usage: true } });
    let text = "";
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe("Hello from openai");
    expect(usage).toEqual(CHAT_USAGE);

    const helper = client.chat.completions.stream({ ...ask("gpt-x"), stream_options: { include_usage: true } });
    const final = await helper.finalChatCompletion();
    expect(final.choices[0]!.message.content).toBe("Hello from openai");
    expect(final.choices[0]!.finish_reason).toBe("stop");
    expect(final.usage).toEqual(CHAT_USAGE);
  });

  it("azure: the same under /openai/v1 with Azure's content filter annotations and its prompt-filter chunk first", async () => {
    const client = azureClient();
    const completion = await client.chat.completions.create(ask("gpt-az"));
    expect(completion.choices[0]!.message.content).toBe("Hello from azure");
    const body = JSON.parse((await post(azure, "/v1/chat/completions", ask("gpt-az"))).text) as Record<string, unknown>;
    expect(body).not.toHaveProperty("service_tier");
    expect(body.prompt_filter_results).toEqual([
      {
        prompt_index: 0,
        content_filter_results: {
          hate: { filtered: false, severity: "safe" },
          jailbreak: { filtered: false, detected: false },
          self_harm: { filtered: false, severity: "safe" },
          sexual: { filtered: false, severity: "safe" },
          violence: { filtered: false, severity: "safe" },
        },
      },
    ]);
    expect((body.choices as Array<Record<string, unknown>>)[0]!.content_filter_results).toMatchObject({ protected_material_code: { filtered: false, detected: false } });

    const chunks = chunksOf((await post(azure, "/v1/chat/completions", chatBody("gpt-az", { stream: true }))).text);
    expect(chunks[0]).toEqual({ choices: [], created: 0, id: "", model: "", object: "", prompt_filter_results: body.prompt_filter_results });
    expect(chunks.slice(1).map((c) => (c.choices as Array<{ finish_reason: string | null }>)[0]!.finish_reason)).toEqual([null, null, null, null, "stop"]);

    const final = await client.chat.completions.stream(ask("gpt-az")).finalChatCompletion();
    expect(final.choices[0]!.message.content).toBe("Hello from azure");
    expect(azure.requests.every((r) => r.path === "/openai/v1/chat/completions" && r.query.get("api-version") === "preview")).toBe(true);
  });

  it("every directive works on chat completions as on responses", async () => {
    for (const client of [openaiClient(), azureClient()]) {
      const model = fakeModel("gpt-x", { status: 429, message: "Slow down", errorCode: "rate_limit_exceeded", retryAfter: 3 });
      for (const call of [() => client.chat.completions.create(ask(model)), () => client.chat.completions.create({ ...ask(model), stream: true })]) {
        const error = await rejection(call());
        expect(error).toBeInstanceOf(OpenAI.RateLimitError);
        const apiError = error as InstanceType<typeof OpenAI.APIError>;
        expect(apiError.message).toContain("Slow down");
        expect(apiError.code).toBe("rate_limit_exceeded");
        expect(apiError.headers?.get("retry-after")).toBe("3");
      }
      expect(await rejection(client.chat.completions.create(ask(fakeModel("gpt-x", { hangUp: true }))))).toBeInstanceOf(OpenAI.APIConnectionError);
      expect(await rejection(client.chat.completions.create(ask(fakeModel("gpt-x", { wire: "garbage" }))))).toBeInstanceOf(OpenAI.APIConnectionError);
    }
    const typed = await post(openai, "/v1/chat/completions", chatBody(fakeModel("gpt-x", { status: 503, message: "Down", errorType: "overloaded" })));
    expect(JSON.parse(typed.text)).toEqual({ error: { message: "Down", type: "overloaded", param: null, code: null } });

    // text, events, inputTokens / outputTokens.
    const shaped = await openaiClient().chat.completions.create(ask(fakeModel("gpt-x", { text: "a|b=c", inputTokens: 2, outputTokens: 3 })));
    expect(shaped.choices[0]!.message.content).toBe("a|b=c");
    expect(shaped.usage).toMatchObject({ prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 });
    const many = chunksOf((await post(openai, "/v1/chat/completions", chatBody(fakeModel("gpt-x", { events: 20 }), { stream: true }))).text);
    expect(many).toHaveLength(22);

    // cutAfter: exactly N frames, then the body fails; [DONE] counts as a frame, so cutAfter past it lets the stream end.
    const cut = await fetch(endpoint(openai, "/v1/chat/completions"), {
      method: "POST",
      headers: { "content-type": "application/json", ...authHeaders(openai) },
      body: JSON.stringify(chatBody(fakeModel("gpt-x", { cutAfter: 2 }), { stream: true })),
    });
    const { text, error } = await readAll(cut);
    expect(error).toBeInstanceOf(Error);
    expect(dataBlocks(text)).toHaveLength(2);
    const whole = await post(openai, "/v1/chat/completions", chatBody(fakeModel("gpt-x", { cutAfter: 6 }), { stream: true }));
    expect(dataBlocks(whole.text).at(-1)).toBe("[DONE]");
    const sdkCut = openaiClient().chat.completions.stream(ask(fakeModel("gpt-x", { cutAfter: 3 })));
    expect(await rejection(sdkCut.finalChatCompletion())).toBeInstanceOf(Error);

    // malformedSse: the second chunk does not parse.
    const malformed = dataBlocks((await post(openai, "/v1/chat/completions", chatBody(fakeModel("gpt-x", { malformedSse: true }), { stream: true }))).text);
    expect(() => JSON.parse(malformed[1]!)).toThrow();
    expect(() => JSON.parse(malformed[0]!)).not.toThrow();
    expect(await rejection(openaiClient().chat.completions.stream(ask(fakeModel("gpt-x", { malformedSse: true }))).finalChatCompletion())).toBeInstanceOf(Error);

    // delayMs: answered after the delay, as usual.
    expect((await openaiClient().chat.completions.create(ask(fakeModel("gpt-x", { delayMs: 20 })))).object).toBe("chat.completion");
  });

  it("stallAfter sends N chunks, then nothing until close()", async () => {
    const fake = await startFakeProvider("openai");
    try {
      const response = await fetch(`${fake.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${fake.apiKey}` },
        body: JSON.stringify(chatBody(fakeModel("gpt-x", { stallAfter: 2 }), { stream: true })),
      });
      const reader = response.body!.getReader();
      const decoder = new TextDecoder();
      let text = "";
      while (sseBlocksLoose(text) < 2) text += decoder.decode((await reader.read()).value, { stream: true });
      expect(dataBlocks(text)).toHaveLength(2);
      const next = reader.read().then(
        (r) => (r.done ? "ended" : "data"),
        () => "failed",
      );
      expect(await Promise.race([next, new Promise<string>((resolve) => setTimeout(() => resolve("quiet"), 200))])).toBe("quiet");
      await fake.close();
      expect(await next).toBe("failed");
    } finally {
      await fake.close();
    }
  });
});

describe("the compatible fake (a vLLM-like chat-only server)", () => {
  it("answers chat completions as vLLM does, through the official SDK, and takes max_tokens", async () => {
    const client = compatibleClient();
    const completion = await client.chat.completions.create({ ...ask("meta-llama/Llama-3.1-8B-Instruct"), max_tokens: 16 });
    expect(compatible.requests[0]!.body).toMatchObject({ max_tokens: 16 });
    expect(compatible.requests[0]!.headers.authorization).toBe(`Bearer ${compatible.apiKey}`);
    const raw = await post(compatible, "/v1/chat/completions", { ...ask("meta-llama/Llama-3.1-8B-Instruct"), max_tokens: 16 });
    expect(raw.headers.get("x-request-id")).toBeNull();
    expect(JSON.parse(raw.text)).toEqual({
      id: completion.id,
      object: "chat.completion",
      created: FAKE_EPOCH_SECONDS,
      model: "meta-llama/Llama-3.1-8B-Instruct",
      choices: [{ index: 0, message: { role: "assistant", content: "Hello from compatible", refusal: null, tool_calls: [] }, logprobs: null, finish_reason: "stop", stop_reason: null }],
      usage: { prompt_tokens: 11, total_tokens: 18, completion_tokens: 7, prompt_tokens_details: null },
      prompt_logprobs: null,
    });
    expect(completion.choices[0]!.message.content).toBe("Hello from compatible");
  });

  it("streams as vLLM does: no usage keys but the last chunk's, stop_reason on the finish chunk; the SDK assembles it", async () => {
    const chunks = chunksOf((await post(compatible, "/v1/chat/completions", chatBody("m", { stream: true, stream_options: { include_usage: true } }))).text);
    const id = chunks[0]!.id as string;
    const head = { id, object: "chat.completion.chunk", created: FAKE_EPOCH_SECONDS, model: "m" };
    expect(chunks).toEqual([
      { ...head, choices: [{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }] },
      { ...head, choices: [{ index: 0, delta: { content: "Hello f" }, logprobs: null, finish_reason: null }] },
      { ...head, choices: [{ index: 0, delta: { content: "rom com" }, logprobs: null, finish_reason: null }] },
      { ...head, choices: [{ index: 0, delta: { content: "patible" }, logprobs: null, finish_reason: null }] },
      { ...head, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: "stop", stop_reason: null }] },
      { ...head, choices: [], usage: { prompt_tokens: 11, total_tokens: 18, completion_tokens: 7 } },
    ]);
    // vLLM sends usage whenever stream_options is given, unless include_usage is false.
    expect(chunksOf((await post(compatible, "/v1/chat/completions", chatBody("m", { stream: true, stream_options: {} }))).text)).toHaveLength(6);
    expect(chunksOf((await post(compatible, "/v1/chat/completions", chatBody("m", { stream: true }))).text)).toHaveLength(5);

    const final = await compatibleClient().chat.completions.stream({ ...ask("m"), stream_options: { include_usage: true } }).finalChatCompletion();
    expect(final.choices[0]!.message.content).toBe("Hello from compatible");
    expect(final.usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 7 });
  });

  it("serves embeddings and models as vLLM does", async () => {
    const client = compatibleClient();
    const embeddings = await client.embeddings.create({ model: "BAAI/bge-small-en-v1.5", input: ["alpha", "beta"] });
    expect(embeddings.data.map((d) => Array.from(d.embedding))).toEqual([fakeEmbedding("alpha"), fakeEmbedding("beta")]);
    const raw = JSON.parse((await post(compatible, "/v1/embeddings", { model: "e", input: "alpha" })).text) as Record<string, unknown>;
    expect(raw).toEqual({
      id: expect.stringMatching(/^embd-[0-9a-f]{32}$/),
      object: "list",
      created: FAKE_EPOCH_SECONDS,
      model: "e",
      data: [{ object: "embedding", index: 0, embedding: fakeEmbedding("alpha") }],
      usage: { prompt_tokens: 11, total_tokens: 11, completion_tokens: 0, prompt_tokens_details: null },
    });

    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(COMPATIBLE_MODEL_IDS);
    expect(models.data[0]).toMatchObject({ object: "model", created: FAKE_EPOCH_SECONDS, owned_by: "vllm", root: COMPATIBLE_MODEL_IDS[0], parent: null, max_model_len: 32_768 });
  });

  it("answers everything else 404 and a wrong key 401, vLLM's way", async () => {
    for (const [method, path] of [["POST", "/v1/responses"], ["POST", "/v1/messages"], ["POST", "/v1/images/generations"], ["GET", "/v1/chat/completions"]] as const) {
      const raw = method === "GET" ? await get(compatible, path) : await post(compatible, path, chatBody("m"));
      expect(raw.status).toBe(404);
      expect(JSON.parse(raw.text)).toEqual({ error: { message: `Invalid URL (${method} ${path})`, type: "NotFoundError", param: null, code: 404 } });
    }
    const error = await rejection(compatibleClient(compatible, "wrong").chat.completions.create(ask("m")));
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    const refused: Array<Record<string, string>> = [{ authorization: "Bearer wrong" }, {}, { "x-api-key": compatible.apiKey }];
    for (const headers of refused) {
      const raw = await post(compatible, "/v1/chat/completions", chatBody("m"), headers);
      expect(raw.status).toBe(401);
      expect(JSON.parse(raw.text)).toEqual({ error: "Unauthorized" });
    }
  });

  it("rejects a request without messages, and sends directive errors with the status as the code", async () => {
    const raw = await post(compatible, "/v1/chat/completions", { model: "m", max_tokens: 5 });
    expect(raw.status).toBe(400);
    expect(JSON.parse(raw.text)).toEqual({ error: { message: "Missing required parameter: 'messages'.", type: "BadRequestError", param: "messages", code: 400 } });

    const down = await post(compatible, "/v1/chat/completions", chatBody(fakeModel("m", { status: 500, message: "Engine died" })));
    expect(JSON.parse(down.text)).toEqual({ error: { message: "Engine died", type: "InternalServerError", param: null, code: 500 } });
    const error = await rejection(compatibleClient().chat.completions.create(ask(fakeModel("m", { status: 429, retryAfter: 2 }))));
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect((error as InstanceType<typeof OpenAI.APIError>).headers?.get("retry-after")).toBe("2");
    expect(JSON.parse((await post(compatible, "/v1/chat/completions", chatBody(fakeModel("m", { status: 429 })))).text)).toEqual({
      error: { message: "Fake compatible error 429", type: "TooManyRequestsError", param: null, code: 429 },
    });
  });
});

describe("tool calls: anthropic", () => {
  const weather = { ...say("claude-x"), tools: anthropicTools };

  it("answers a user turn with a tool_use block of the first tool, stop_reason tool_use", async () => {
    const message = await anthropicClient().messages.create(weather);
    const [block] = message.content;
    expect(block).toEqual({ type: "tool_use", id: expect.stringMatching(/^toolu_[0-9a-f]{24}$/), name: "get_weather", input: { city: "Paris" }, caller: { type: "direct" } });
    expect(message.stop_reason).toBe("tool_use");
    expect(message.content).toHaveLength(1);
    // The id depends only on the request.
    expect((await anthropicClient().messages.create(weather)).content[0]).toEqual(block);
  });

  it("calls the tool tool_choice names, with the toolArgs directive's arguments; tool_choice none answers text", async () => {
    const model = fakeModel("claude-x", { toolArgs: '{"zone":"UTC","precise":true}' });
    const named = await anthropicClient().messages.create({ ...weather, model, tool_choice: { type: "tool", name: "get_time" } });
    expect(named.content[0]).toMatchObject({ type: "tool_use", name: "get_time", input: { zone: "UTC", precise: true } });
    const any = await anthropicClient().messages.create({ ...weather, tool_choice: { type: "any" } });
    expect(any.content[0]).toMatchObject({ name: "get_weather" });
    const none = await anthropicClient().messages.create({ ...weather, tool_choice: { type: "none" } });
    expect(none.content).toEqual([{ type: "text", text: "Hello from anthropic", citations: null }]);
    expect(none.stop_reason).toBe("end_turn");
  });

  it("streams content_block_start tool_use, input_json_delta pieces, content_block_stop; the SDK assembles the input", async () => {
    const raw = await post(anthropic, "/v1/messages", { ...weather, stream: true });
    const events = sseBlocks(raw.text).map(parsed);
    const id = (events[1] as { content_block: { id: string } }).content_block.id;
    expect(events.slice(1, -2)).toEqual([
      { type: "content_block_start", index: 0, content_block: { type: "tool_use", id, name: "get_weather", input: {}, caller: { type: "direct" } } },
      { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: '{"cit' } },
      { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: 'y":"P' } },
      { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: 'aris"}' } },
      { type: "content_block_stop", index: 0 },
    ] satisfies Anthropic.RawMessageStreamEvent[]);
    expect(events.at(-2)).toMatchObject({ type: "message_delta", delta: { stop_reason: "tool_use" } });

    const final = await anthropicClient().messages.stream({ ...weather, model: fakeModel("claude-x", { events: 7 }) }).finalMessage();
    expect(final.content[0]).toMatchObject({ type: "tool_use", name: "get_weather", input: { city: "Paris" } });
    expect(final.stop_reason).toBe("tool_use");
  });

  it("answers a tool result with the tool's name and the result's text", async () => {
    const message = await anthropicClient().messages.create({
      ...weather,
      messages: [
        { role: "user", content: "Weather in Paris?" },
        { role: "assistant", content: [{ type: "text", text: "Let me look." }, { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "Sunny, 21°C" }] }] },
      ],
    });
    expect(message.content).toEqual([{ type: "text", text: "Tool get_weather said: Sunny, 21°C", citations: null }]);
    expect(message.stop_reason).toBe("end_turn");

    // Two results, one line each; the text directive wins over the echo.
    const two = {
      ...weather,
      messages: [
        { role: "user" as const, content: "Both?" },
        {
          role: "assistant" as const,
          content: [
            { type: "tool_use" as const, id: "a", name: "get_weather", input: {} },
            { type: "tool_use" as const, id: "b", name: "get_time", input: {} },
          ],
        },
        {
          role: "user" as const,
          content: [
            { type: "tool_result" as const, tool_use_id: "b", content: "noon" },
            { type: "tool_result" as const, tool_use_id: "a", content: "rain" },
          ],
        },
      ],
    };
    expect((await anthropicClient().messages.create(two)).content[0]).toMatchObject({ text: "Tool get_time said: noon\nTool get_weather said: rain" });
    expect((await anthropicClient().messages.create({ ...two, model: fakeModel("claude-x", { text: "Fixed" }) })).content[0]).toMatchObject({ text: "Fixed" });
  });
});

describe("tool calls: responses", () => {
  const weather = { model: "gpt-x", input: "Weather?", tools: responsesTools };

  it("answers a user turn with a completed function_call item, and echoes the tools", async () => {
    const response = await openaiClient().responses.create(weather);
    expect(response.status).toBe("completed");
    expect(response.output).toEqual([
      {
        id: expect.stringMatching(/^fc_[0-9a-f]{48}$/),
        type: "function_call",
        status: "completed",
        arguments: DEFAULT_TOOL_ARGS,
        call_id: expect.stringMatching(/^call_[0-9a-f]{24}$/),
        name: "get_weather",
      },
    ]);
    expect(response.output_text).toBe("");
    expect(response.tools).toEqual([
      { type: "function", name: "get_weather", description: "The weather in a city", parameters: WEATHER_SCHEMA, strict: false },
      { type: "function", name: "get_time", description: null, parameters: null, strict: true },
    ]);
    const named = await openaiClient().responses.create({ ...weather, model: fakeModel("gpt-x", { toolArgs: "{}" }), tool_choice: { type: "function", name: "get_time" } });
    expect(named.output[0]).toMatchObject({ type: "function_call", name: "get_time", arguments: "{}" });
    expect(named.tool_choice).toEqual({ type: "function", name: "get_time" });
    const none = await openaiClient().responses.create({ ...weather, tool_choice: "none" });
    expect(none.output_text).toBe("Hello from openai");
  });

  it("streams output_item.added, function_call_arguments.delta and .done, output_item.done", async () => {
    const raw = await post(openai, "/v1/responses", { ...weather, stream: true });
    const blocks = sseBlocks(raw.text);
    expect(blocks.map((b) => b.event)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.done",
      "response.output_item.done",
      "response.completed",
    ]);
    const events = blocks.map(parsed);
    const item = (events[2] as { item: { id: string; call_id: string } }).item;
    expect(events.slice(2, 8)).toEqual([
      { type: "response.output_item.added", sequence_number: 2, output_index: 0, item: { id: item.id, type: "function_call", status: "in_progress", arguments: "", call_id: item.call_id, name: "get_weather" } },
      { type: "response.function_call_arguments.delta", sequence_number: 3, item_id: item.id, output_index: 0, delta: '{"cit' },
      { type: "response.function_call_arguments.delta", sequence_number: 4, item_id: item.id, output_index: 0, delta: 'y":"P' },
      { type: "response.function_call_arguments.delta", sequence_number: 5, item_id: item.id, output_index: 0, delta: 'aris"}' },
      { type: "response.function_call_arguments.done", sequence_number: 6, item_id: item.id, output_index: 0, arguments: DEFAULT_TOOL_ARGS },
      { type: "response.output_item.done", sequence_number: 7, output_index: 0, item: { id: item.id, type: "function_call", status: "completed", arguments: DEFAULT_TOOL_ARGS, call_id: item.call_id, name: "get_weather" } },
    ] satisfies OpenAI.Responses.ResponseStreamEvent[]);

    const final = await openaiClient().responses.stream(weather).finalResponse();
    expect(final.output[0]).toMatchObject({ type: "function_call", name: "get_weather", arguments: DEFAULT_TOOL_ARGS, call_id: item.call_id });
  });

  it("answers a function_call_output with the tool's name and the output's text", async () => {
    const response = await openaiClient().responses.create({
      ...weather,
      input: [
        { role: "user", content: "Weather?" },
        { type: "function_call", call_id: "call_1", name: "get_weather", arguments: DEFAULT_TOOL_ARGS },
        { type: "function_call_output", call_id: "call_1", output: "Sunny" },
      ],
    });
    expect(response.output_text).toBe("Tool get_weather said: Sunny");
    const parts = await openaiClient().responses.create({
      ...weather,
      input: [
        { role: "user", content: "Weather?" },
        { type: "function_call", call_id: "call_1", name: "get_weather", arguments: "{}" },
        { type: "function_call_output", call_id: "call_1", output: [{ type: "input_text", text: "Cloudy" }] },
      ],
    });
    expect(parts.output_text).toBe("Tool get_weather said: Cloudy");
  });
});

describe("tool calls: chat completions", () => {
  const weather = { ...ask("gpt-x"), tools: chatTools };

  it("answers a user turn with tool_calls, finish_reason tool_calls", async () => {
    for (const client of [openaiClient(), azureClient()]) {
      const completion = await client.chat.completions.create(weather);
      const choice = completion.choices[0]!;
      expect(choice.finish_reason).toBe("tool_calls");
      expect(choice.message).toEqual({
        role: "assistant",
        content: null,
        tool_calls: [{ id: expect.stringMatching(/^call_[0-9a-f]{24}$/), type: "function", function: { name: "get_weather", arguments: DEFAULT_TOOL_ARGS } }],
        refusal: null,
        annotations: [],
      });
    }
    const named = await openaiClient().chat.completions.create({ ...weather, tool_choice: { type: "function", function: { name: "get_time" } } });
    expect(named.choices[0]!.message.tool_calls?.[0]).toMatchObject({ function: { name: "get_time" } });
    const none = await openaiClient().chat.completions.create({ ...weather, tool_choice: "none" });
    expect(none.choices[0]!.message.content).toBe("Hello from openai");
  });

  it("streams the first tool_calls delta with id, type, name and arguments \"\", then argument pieces", async () => {
    const model = fakeModel("gpt-x", { toolArgs: '{"city":"Oslo"}', events: 2 });
    const chunks = chunksOf((await post(openai, "/v1/chat/completions", { ...weather, model, stream: true })).text);
    const deltas = chunks.map((c) => (c.choices as OpenAI.ChatCompletionChunk.Choice[])[0]!);
    const id = deltas[0]!.delta.tool_calls![0]!.id!;
    expect(id).toMatch(/^call_[0-9a-f]{24}$/);
    expect(deltas).toEqual([
      { index: 0, delta: { role: "assistant", content: null, tool_calls: [{ index: 0, id, type: "function", function: { name: "get_weather", arguments: "" } }], refusal: null }, logprobs: null, finish_reason: null },
      { index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"city"' } }] }, logprobs: null, finish_reason: null },
      { index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: ':"Oslo"}' } }] }, logprobs: null, finish_reason: null },
      { index: 0, delta: {}, logprobs: null, finish_reason: "tool_calls" },
    ] satisfies OpenAI.ChatCompletionChunk.Choice[]);

    for (const client of [openaiClient(), azureClient(), compatibleClient()]) {
      const final = await client.chat.completions.stream({ ...weather, model }).finalChatCompletion();
      expect(final.choices[0]!.finish_reason).toBe("tool_calls");
      expect(final.choices[0]!.message.tool_calls?.[0]).toMatchObject({ type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } });
    }
  });

  it("compatible: vLLM's tool call ids, and a first tool call delta with the name but no arguments", async () => {
    const plain = await compatibleClient().chat.completions.create(weather);
    expect(plain.choices[0]!.message.tool_calls?.[0]?.id).toMatch(/^chatcmpl-tool-[0-9a-f]{32}$/);
    const chunks = chunksOf((await post(compatible, "/v1/chat/completions", { ...weather, stream: true })).text);
    const deltas = chunks.map((c) => (c.choices as OpenAI.ChatCompletionChunk.Choice[])[0]!.delta);
    expect(deltas[0]).toEqual({ role: "assistant", content: "" });
    expect(deltas[1]).toEqual({ tool_calls: [{ id: expect.stringMatching(/^chatcmpl-tool-[0-9a-f]{32}$/), type: "function", index: 0, function: { name: "get_weather" } }] });
    expect(deltas.slice(2).map((d) => d.tool_calls?.[0]?.function?.arguments ?? "").join("")).toBe(DEFAULT_TOOL_ARGS);
  });

  it("answers tool messages with the tools' names and the results' text; the SDK's tool runner runs the loop", async () => {
    const completion = await openaiClient().chat.completions.create({
      ...weather,
      messages: [
        { role: "user", content: "Weather?" },
        { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: DEFAULT_TOOL_ARGS } }] },
        { role: "tool", tool_call_id: "call_1", content: [{ type: "text", text: "Sunny" }] },
      ],
    });
    expect(completion.choices[0]!.message.content).toBe("Tool get_weather said: Sunny");
    expect(completion.choices[0]!.finish_reason).toBe("stop");

    const runner = compatibleClient().chat.completions.runTools({
      model: "m",
      messages: [{ role: "user", content: "Weather in Paris?" }],
      tools: [
        {
          type: "function",
          function: {
            name: "get_weather",
            description: "The weather in a city",
            parameters: WEATHER_SCHEMA,
            function: (args: { city: string }) => `Sunny in ${args.city}`,
            parse: (text: string) => JSON.parse(text) as { city: string },
          },
        },
      ],
    });
    expect(await runner.finalContent()).toBe("Tool get_weather said: Sunny in Paris");
  });
});

describe("images", () => {
  const png = `data:image/png;base64,${TINY_PNG_BASE64}`;

  it("anthropic: base64 and url image blocks, tool results included, are counted", async () => {
    const message = await anthropicClient().messages.create({
      ...say("claude-x"),
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "What are these?" },
            { type: "image", source: { type: "base64", media_type: "image/png", data: TINY_PNG_BASE64 } },
            { type: "image", source: { type: "url", url: "https://example.com/cat.jpg" } },
          ],
        },
      ],
    });
    expect(message.content[0]).toMatchObject({ text: "Hello from anthropic. Saw 2 images." });
    const result = await anthropicClient().messages.create({
      ...say("claude-x"),
      tools: anthropicTools,
      messages: [
        { role: "user", content: "Screenshot?" },
        { role: "assistant", content: [{ type: "tool_use", id: "s", name: "get_time", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "s", content: [{ type: "text", text: "Here" }, { type: "image", source: { type: "base64", media_type: "image/gif", data: "R0lGODlh" } }] }] },
      ],
    });
    expect(result.content[0]).toMatchObject({ text: "Tool get_time said: Here. Saw 1 image." });
  });

  it("responses: input_image parts with data URLs and https URLs are counted", async () => {
    const response = await openaiClient().responses.create({
      model: "gpt-x",
      input: [{ role: "user", content: [{ type: "input_text", text: "What is it?" }, { type: "input_image", image_url: png, detail: "auto" }] }],
    });
    expect(response.output_text).toBe("Hello from openai. Saw 1 image.");
    const two = await azureClient().responses.create({
      model: "gpt-x",
      input: [{ role: "user", content: [{ type: "input_image", image_url: png, detail: "low" }, { type: "input_image", image_url: "https://example.com/a.webp", detail: "high" }] }],
    });
    expect(two.output_text).toBe("Hello from azure. Saw 2 images.");
  });

  it("chat: image_url parts are counted, on every chat fake; the text directive wins", async () => {
    const withImage = (model: string): OpenAI.ChatCompletionCreateParamsNonStreaming => ({
      model,
      messages: [{ role: "user", content: [{ type: "text", text: "What is it?" }, { type: "image_url", image_url: { url: png, detail: "auto" } }] }],
    });
    expect((await openaiClient().chat.completions.create(withImage("gpt-x"))).choices[0]!.message.content).toBe("Hello from openai. Saw 1 image.");
    expect((await compatibleClient().chat.completions.create(withImage("m"))).choices[0]!.message.content).toBe("Hello from compatible. Saw 1 image.");
    expect((await openaiClient().chat.completions.create(withImage(fakeModel("gpt-x", { text: "A pixel." })))).choices[0]!.message.content).toBe("A pixel.");
  });
});

describe("request validation, as the real APIs do", () => {
  const png = `data:image/png;base64,${TINY_PNG_BASE64}`;
  const toolTurns = (result: Record<string, unknown>) => [
    { role: "user", content: "Weather?" },
    { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "get_weather", input: {} }] },
    { role: "user", content: [result] },
  ];

  it.each<[string, Record<string, unknown>, string]>([
    ["no max_tokens", { model: "claude-x", messages: [{ role: "user", content: "Hi" }] }, "max_tokens: Field required"],
    ["max_tokens 0", anthropicBody("claude-x", { max_tokens: 0 }), "max_tokens: Input should be greater than or equal to 1"],
    ["no messages", { model: "claude-x", max_tokens: 8 }, "messages: Field required"],
    ["a system role", anthropicBody("claude-x", { messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }] }), "messages.0.role: Input should be 'user' or 'assistant'"],
    ["an empty user turn", anthropicBody("claude-x", { messages: [{ role: "user", content: [] }] }), "messages.0: all messages must have non-empty content except for the optional final assistant message"],
    ["an empty text block", anthropicBody("claude-x", { messages: [{ role: "user", content: [{ type: "text", text: " " }] }] }), "messages.0.content.0: text content blocks must contain non-whitespace text"],
    [
      "a tool_result for an unknown id",
      anthropicBody("claude-x", { tools: anthropicTools, messages: toolTurns({ type: "tool_result", tool_use_id: "toolu_2", content: "x" }) }),
      "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_2. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
    ],
    [
      "a tool_result after a turn without tool_use",
      anthropicBody("claude-x", { tools: anthropicTools, messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "x" }] }] }),
      "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_1. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
    ],
    [
      "a tool_use left unanswered",
      anthropicBody("claude-x", { tools: anthropicTools, messages: toolTurns({ type: "text", text: "Never mind" }) }),
      "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
    ],
    ["a tool without input_schema", anthropicBody("claude-x", { tools: [{ name: "get_weather" }] }), "tools.0.custom.input_schema: Field required"],
    ["a tool without name", anthropicBody("claude-x", { tools: [{ input_schema: { type: "object" } }] }), "tools.0.custom.name: Field required"],
    ["an input_schema not of type object", anthropicBody("claude-x", { tools: [{ name: "f", input_schema: { type: "string" } }] }), "tools.0.custom.input_schema.type: Input should be 'object'"],
    ["two tools of one name", anthropicBody("claude-x", { tools: [anthropicTools[0], anthropicTools[0]] }), "tools: Tool names must be unique."],
    ["tool_choice without tools", anthropicBody("claude-x", { tool_choice: { type: "any" } }), "tool_choice: tool_choice may only be specified while providing tools."],
    ["tool_choice naming no tool", anthropicBody("claude-x", { tools: anthropicTools, tool_choice: { type: "tool", name: "nope" } }), "tool_choice.tool.name: Tool 'nope' not found in tools."],
    [
      "an image of an unknown media type",
      anthropicBody("claude-x", { messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/bmp", data: TINY_PNG_BASE64 } }] }] }),
      "messages.0.content.0.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'",
    ],
    [
      "an image whose data is not base64",
      anthropicBody("claude-x", { messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: png } }] }] }),
      "messages.0.content.0.source.base64.data: The image data is not valid base64.",
    ],
    [
      "an image url that is not http(s)",
      anthropicBody("claude-x", { messages: [{ role: "user", content: [{ type: "image", source: { type: "url", url: png } }] }] }),
      `messages.0.content.0.source.url.url: '${png.slice(0, 80)}' is not an http or https URL`,
    ],
  ])("anthropic refuses %s with a 400", async (_name, body, message) => {
    const raw = await post(anthropic, "/v1/messages", body);
    expect(raw.status).toBe(400);
    expect(JSON.parse(raw.text)).toEqual({ type: "error", error: { type: "invalid_request_error", message } });
  });

  it.each<[string, Record<string, unknown>, { message: string; param: string | null; code: string | null }]>([
    [
      "a function_call_output without its function_call",
      responsesBody("gpt-x", { input: [{ role: "user", content: "Hi" }, { type: "function_call_output", call_id: "call_9", output: "x" }] }),
      { message: "No tool call found for function call output with call_id call_9.", param: "input", code: null },
    ],
    [
      "a function_call without its output",
      responsesBody("gpt-x", { input: [{ role: "user", content: "Hi" }, { type: "function_call", call_id: "call_9", name: "f", arguments: "{}" }] }),
      { message: "No tool output found for function call call_9.", param: "input", code: null },
    ],
    ["a function tool without name", responsesBody("gpt-x", { tools: [{ type: "function", parameters: {} }] }), { message: "Missing required parameter: 'tools[0].name'.", param: "tools[0].name", code: "missing_required_parameter" }],
    ["a built-in tool", responsesBody("gpt-x", { tools: [{ type: "web_search" }] }), { message: "The fake provider serves only function tools, not 'web_search'.", param: "tools[0].type", code: "invalid_value" }],
    ["tool_choice naming no tool", responsesBody("gpt-x", { tools: responsesTools, tool_choice: { type: "function", name: "nope" } }), { message: "Tool choice 'function' not found in 'tools' parameter.", param: "tool_choice", code: null }],
    [
      "an input_image of an unknown MIME type",
      responsesBody("gpt-x", { input: [{ role: "user", content: [{ type: "input_image", image_url: "data:image/bmp;base64,AAAA", detail: "auto" }] }] }),
      {
        message: "Invalid 'input[0].content[0].image_url': unsupported MIME type 'image/bmp' (expected one of image/jpeg, image/png, image/gif, image/webp).",
        param: "input[0].content[0].image_url",
        code: "invalid_value",
      },
    ],
    [
      "an input_image whose data is not base64",
      responsesBody("gpt-x", { input: [{ role: "user", content: [{ type: "input_image", image_url: "data:image/png;base64,not base64!", detail: "auto" }] }] }),
      { message: "Invalid 'input[0].content[0].image_url': the data URL's base64 data does not decode.", param: "input[0].content[0].image_url", code: "invalid_value" },
    ],
    [
      "a message of an unknown role",
      responsesBody("gpt-x", { input: [{ role: "tool", content: "x" }] }),
      { message: "Invalid value: 'tool'. Supported values are: 'assistant', 'system', 'developer', and 'user'.", param: "input[0].role", code: "invalid_value" },
    ],
  ])("responses refuses %s with a 400", async (_name, body, error) => {
    for (const fake of [openai, azure]) {
      const raw = await post(fake, "/v1/responses", body);
      expect(raw.status).toBe(400);
      expect(JSON.parse(raw.text)).toEqual({ error: { type: "invalid_request_error", ...error } });
    }
  });

  const toolCallTurn = { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{}" } }] };
  it.each<[string, Record<string, unknown>, { message: string; param: string | null; code: string | null }]>([
    ["no messages", { model: "gpt-x" }, { message: "Missing required parameter: 'messages'.", param: "messages", code: "missing_required_parameter" }],
    [
      "empty messages",
      chatBody("gpt-x", { messages: [] }),
      { message: "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", param: "messages", code: "empty_array" },
    ],
    [
      "an unknown role",
      chatBody("gpt-x", { messages: [{ role: "model", content: "Hi" }] }),
      { message: "Invalid value: 'model'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", param: "messages[0].role", code: "invalid_value" },
    ],
    [
      "a tool message with no tool_calls before it",
      chatBody("gpt-x", { messages: [{ role: "user", content: "Hi" }, { role: "tool", tool_call_id: "call_1", content: "x" }] }),
      { message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", param: "messages.[1].role", code: null },
    ],
    [
      "a tool message answering another id",
      chatBody("gpt-x", { tools: chatTools, messages: [{ role: "user", content: "Hi" }, toolCallTurn, { role: "tool", tool_call_id: "call_2", content: "x" }] }),
      { message: "Invalid parameter: 'tool_call_id' of 'call_2' not found in 'tool_calls' of previous message.", param: "messages.[2].tool_call_id", code: null },
    ],
    [
      "tool_calls left unanswered",
      chatBody("gpt-x", { tools: chatTools, messages: [{ role: "user", content: "Hi" }, toolCallTurn, { role: "user", content: "Well?" }] }),
      {
        message: "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_1",
        param: "messages.[1].role",
        code: null,
      },
    ],
    ["a tool that is not a function", chatBody("gpt-x", { tools: [{ type: "retrieval" }] }), { message: "Invalid value: 'retrieval'. Supported values are: 'function' and 'custom'.", param: "tools[0].type", code: "invalid_value" }],
    ["a function without name", chatBody("gpt-x", { tools: [{ type: "function", function: { parameters: {} } }] }), { message: "Missing required parameter: 'tools[0].function.name'.", param: "tools[0].function.name", code: "missing_required_parameter" }],
    [
      "tool_choice without tools",
      chatBody("gpt-x", { tool_choice: "required" }),
      { message: "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.", param: "tool_choice", code: null },
    ],
    ["stream_options without stream", chatBody("gpt-x", { stream_options: { include_usage: true } }), { message: "The 'stream_options' parameter is only allowed when 'stream' is enabled.", param: "stream_options", code: "invalid_value" }],
    [
      "an image_url of an unknown MIME type",
      chatBody("gpt-x", { messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:text/plain;base64,AAAA" } }] }] }),
      {
        message: "Invalid 'messages[0].content[0].image_url.url': unsupported MIME type 'text/plain' (expected one of image/jpeg, image/png, image/gif, image/webp).",
        param: "messages[0].content[0].image_url.url",
        code: "invalid_image_url",
      },
    ],
    [
      "an image_url whose data is not base64",
      chatBody("gpt-x", { messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:image/jpeg;base64,@@@@" } }] }] }),
      { message: "Invalid 'messages[0].content[0].image_url.url': the data URL's base64 data does not decode.", param: "messages[0].content[0].image_url.url", code: "invalid_image_url" },
    ],
  ])("chat completions refuses %s with a 400, on openai, azure and compatible", async (_name, body, error) => {
    for (const fake of [openai, azure]) {
      const raw = await post(fake, "/v1/chat/completions", body);
      expect(raw.status).toBe(400);
      expect(JSON.parse(raw.text)).toEqual({ error: { type: "invalid_request_error", ...error } });
    }
    const raw = await post(compatible, "/v1/chat/completions", body);
    expect(raw.status).toBe(400);
    expect(JSON.parse(raw.text)).toEqual({ error: { message: error.message, type: "BadRequestError", param: error.param, code: 400 } });
  });

  it("the SDKs raise their BadRequestError with the message", async () => {
    const anthropicError = await rejection(anthropicClient().messages.create({ ...say("claude-x"), tools: [{ name: "f", input_schema: { type: "object" } }], tool_choice: { type: "tool", name: "g" } }));
    expect(anthropicError).toBeInstanceOf(Anthropic.BadRequestError);
    expect((anthropicError as Error).message).toContain("Tool 'g' not found in tools.");
    const chatError = await rejection(openaiClient().chat.completions.create({ ...ask("gpt-x"), messages: [{ role: "tool", tool_call_id: "x", content: "y" }] }));
    expect(chatError).toBeInstanceOf(OpenAI.BadRequestError);
    expect((chatError as InstanceType<typeof OpenAI.APIError>).param).toBe("messages.[0].role");
    const responsesError = await rejection(openaiClient().responses.create({ model: "gpt-x", input: [{ type: "function_call_output", call_id: "c", output: "x" }] }));
    expect(responsesError).toBeInstanceOf(OpenAI.BadRequestError);
    expect((responsesError as Error).message).toContain("No tool call found for function call output with call_id c.");
  });

  it("fault directives act before validation", async () => {
    const raw = await post(anthropic, "/v1/messages", { model: fakeModel("claude-x", { status: 503 }), messages: [] });
    expect(raw.status).toBe(503);
  });
});

describe("toolArgs and determinism of the new answers", () => {
  it("toolArgs round-trips and must be the JSON text of an object", () => {
    expect(parseFakeModel(fakeModel("m", { toolArgs: '{"a":[1,2]}' }))).toEqual({ ok: true, base: "m", directives: { toolArgs: '{"a":[1,2]}' } });
    for (const bad of ["[1]", "nope", '"text"', "null"]) expect(parseFakeModel(`m|toolArgs=${bad}`).ok).toBe(false);
  });

  it.each<[string, () => FakeProvider, string, (model: string) => unknown]>([
    ["openai chat", () => openai, "/v1/chat/completions", (m) => chatBody(m)],
    ["openai chat streamed", () => openai, "/v1/chat/completions", (m) => chatBody(m, { stream: true, stream_options: { include_usage: true } })],
    ["azure chat streamed", () => azure, "/v1/chat/completions", (m) => chatBody(m, { stream: true })],
    ["compatible chat streamed", () => compatible, "/v1/chat/completions", (m) => chatBody(m, { stream: true, tools: chatTools })],
    ["compatible embeddings", () => compatible, "/v1/embeddings", (m) => ({ model: m, input: "a" })],
    ["anthropic tool call streamed", () => anthropic, "/v1/messages", (m) => anthropicBody(m, { stream: true, tools: anthropicTools })],
    ["responses tool call", () => openai, "/v1/responses", (m) => responsesBody(m, { tools: responsesTools })],
  ])("%s: the same request gives the same bytes", async (_name, fake, path, makeBody) => {
    const model = fakeModel("model-x", { events: 2 });
    const first = await post(fake(), path, makeBody(model));
    const second = await post(fake(), path, makeBody(model));
    expect(first.status).toBe(200);
    expect(second.text).toBe(first.text);
    expect(first.text).toContain(JSON.stringify(model));
  });
});

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
  type FakeProvider,
} from "./support/fake-providers.ts";

let anthropic: FakeProvider;
let openai: FakeProvider;
let azure: FakeProvider;

beforeAll(async () => {
  [anthropic, openai, azure] = await Promise.all([startFakeProvider("anthropic"), startFakeProvider("openai"), startFakeProvider("azure")]);
});

afterAll(async () => {
  await Promise.all([anthropic?.close(), openai?.close(), azure?.close()]);
});

beforeEach(() => {
  for (const fake of [anthropic, openai, azure]) fake.reset();
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

function authHeaders(fake: FakeProvider): Record<string, string> {
  switch (fake.kind) {
    case "anthropic":
      return { "x-api-key": fake.apiKey };
    case "openai":
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
    for (const path of ["/v1/messages", "/v1/chat/completions", "/openai/v1/responses"]) {
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

import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";
import { startFakeProvider, TINY_PNG_BASE64, type FakeProvider } from "./support/fake-providers.ts";
import { setUpGateway, type GatewayFixture } from "./support/gateway-setup.ts";

/**
 * Every client format against every provider kind, through the official SDKs: a tool call and its
 * result, plain and streamed. The fakes answer a request that declares tools with a call to the
 * first one ({"city":"Paris"}), and a tool result with "Tool <name> said: <result>".
 */

let t: TestApp;
let g: GatewayFixture;
let local: FakeProvider;

beforeAll(async () => {
  t = await startTestApp();
  g = await setUpGateway(t);
  local = await startFakeProvider("compatible");
  const created = await g.admin("POST", "/v1/gateway/providers", { body: { name: "local", kind: "openai_compatible", baseUrl: `${local.url}/v1`, apiKey: local.apiKey } });
  expect(created.status, created.text).toBe(201);
  const rule = await g.admin("POST", "/v1/gateway/routing-rules", { body: { priority: 5, models: ["local-*"], providerName: "local" } });
  expect(rule.status, rule.text).toBe(201);
  await t.app.gateway!.watcher.reload();
});
afterAll(async () => {
  await local?.close();
  await g?.close();
  await t?.stop();
});

const QUESTION = "What is the weather in Paris?";
const SCHEMA = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };

/** What a round trip came to, in any format: the call the model made, and the answer to its result. */
interface RoundTrip {
  call: { name: string; arguments: unknown };
  firstStop: string | null;
  text: string;
  secondStop: string | null;
}

async function messagesRoundTrip(model: string, stream: boolean): Promise<RoundTrip> {
  const anthropic = new Anthropic({ baseURL: t.gatewayUrl, apiKey: g.key, maxRetries: 0 });
  const tools: Anthropic.Tool[] = [{ name: "get_weather", description: "The weather in a city", input_schema: { type: "object", properties: SCHEMA.properties, required: SCHEMA.required } }];
  const ask = (messages: Anthropic.MessageParam[]) =>
    stream ? anthropic.messages.stream({ model, max_tokens: 256, tools, messages }).finalMessage() : anthropic.messages.create({ model, max_tokens: 256, tools, messages });
  const question: Anthropic.MessageParam = { role: "user", content: QUESTION };
  const first = await ask([question]);
  const use = first.content.find((block) => block.type === "tool_use");
  if (!use || use.type !== "tool_use") throw new Error(`no tool call: ${JSON.stringify(first)}`);
  const second = await ask([question, { role: "assistant", content: first.content }, { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "sunny" }] }]);
  const text = second.content.map((block) => (block.type === "text" ? block.text : "")).join("");
  return { call: { name: use.name, arguments: use.input }, firstStop: first.stop_reason, text, secondStop: second.stop_reason };
}

async function responsesRoundTrip(model: string, stream: boolean): Promise<RoundTrip> {
  const openai = new OpenAI({ baseURL: `${t.gatewayUrl}/v1`, apiKey: g.key, maxRetries: 0 });
  const tools: OpenAI.Responses.FunctionTool[] = [{ type: "function", name: "get_weather", description: "The weather in a city", parameters: SCHEMA, strict: false }];
  const ask = (input: OpenAI.Responses.ResponseInput) =>
    stream ? openai.responses.stream({ model, input, tools }).finalResponse() : openai.responses.create({ model, input, tools });
  const question: OpenAI.Responses.ResponseInputItem = { role: "user", content: QUESTION };
  const first = await ask([question]);
  const call = first.output.find((item) => item.type === "function_call");
  if (!call || call.type !== "function_call") throw new Error(`no tool call: ${JSON.stringify(first)}`);
  const second = await ask([question, call, { type: "function_call_output", call_id: call.call_id, output: "sunny" }]);
  return { call: { name: call.name, arguments: JSON.parse(call.arguments) }, firstStop: first.status ?? null, text: second.output_text, secondStop: second.status ?? null };
}

async function chatRoundTrip(model: string, stream: boolean): Promise<RoundTrip> {
  const openai = new OpenAI({ baseURL: `${t.gatewayUrl}/v1`, apiKey: g.key, maxRetries: 0 });
  const tools: OpenAI.Chat.ChatCompletionTool[] = [{ type: "function", function: { name: "get_weather", description: "The weather in a city", parameters: SCHEMA } }];
  const ask = (messages: OpenAI.Chat.ChatCompletionMessageParam[]) =>
    stream
      ? openai.chat.completions.stream({ model, messages, tools, stream_options: { include_usage: true } }).finalChatCompletion()
      : openai.chat.completions.create({ model, messages, tools });
  const question: OpenAI.Chat.ChatCompletionMessageParam = { role: "user", content: QUESTION };
  const first = await ask([question]);
  const choice = first.choices[0]!;
  const call = choice.message.tool_calls?.[0];
  if (!call || call.type !== "function") throw new Error(`no tool call: ${JSON.stringify(first)}`);
  // The answer's message goes back as history as it came, as OpenAI code does.
  const second = await ask([question, choice.message, { role: "tool", tool_call_id: call.id, content: "sunny" }]);
  return {
    call: { name: call.function.name, arguments: JSON.parse(call.function.arguments) },
    firstStop: choice.finish_reason,
    text: second.choices[0]!.message.content ?? "",
    secondStop: second.choices[0]!.finish_reason,
  };
}

const clients = {
  messages: { roundTrip: messagesRoundTrip, stops: ["tool_use", "end_turn"] },
  responses: { roundTrip: responsesRoundTrip, stops: ["completed", "completed"] },
  chat: { roundTrip: chatRoundTrip, stops: ["tool_calls", "stop"] },
} as const;

/** The model that each rule routes to each provider, and what the provider is sent for each client. */
const providers = {
  anthropic: { model: "claude-weather", fake: () => g.anthropic, paths: { messages: "/v1/messages", responses: "/v1/messages", chat: "/v1/messages" } },
  openai: { model: "gpt-weather", fake: () => g.openai, paths: { messages: "/v1/responses", responses: "/v1/responses", chat: "/v1/chat/completions" } },
  azure: { model: "azure-weather", fake: () => g.azure, paths: { messages: "/openai/v1/responses", responses: "/openai/v1/responses", chat: "/openai/v1/chat/completions" } },
  compatible: { model: "local-weather", fake: () => local, paths: { messages: "/v1/chat/completions", responses: "/v1/chat/completions", chat: "/v1/chat/completions" } },
} as const;

const cases = (Object.keys(clients) as (keyof typeof clients)[]).flatMap((client) =>
  (Object.keys(providers) as (keyof typeof providers)[]).flatMap((provider) => [false, true].map((stream) => [client, provider, stream] as const)),
);

describe("every client format to every provider kind", () => {
  it.each(cases)("%s client, %s provider, streamed: %s — a tool call round trip", async (client, provider, stream) => {
    const target = providers[provider];
    const fake = target.fake();
    fake.reset();
    const trip = await clients[client].roundTrip(target.model, stream);
    expect(trip).toEqual({
      call: { name: "get_weather", arguments: { city: "Paris" } },
      firstStop: clients[client].stops[0],
      text: "Tool get_weather said: sunny",
      secondStop: clients[client].stops[1],
    });
    // Both calls reached the provider in its own format.
    expect(fake.requests.map((r) => r.path)).toEqual([target.paths[client], target.paths[client]]);
  });
});

describe("count_tokens", () => {
  const request = { model: "", system: "Be brief.", messages: [{ role: "user" as const, content: "Hello, world!" }] };

  it("passes through to an Anthropic provider", async () => {
    const anthropic = new Anthropic({ baseURL: t.gatewayUrl, apiKey: g.key, maxRetries: 0 });
    g.anthropic.reset();
    expect(await anthropic.messages.countTokens({ ...request, model: "claude-count" })).toEqual({ input_tokens: 11 });
    expect(g.anthropic.requests.map((r) => [r.path, r.body])).toEqual([["/v1/messages/count_tokens", { ...request, model: "claude-count" }]]);
  });

  it("is estimated for the other kinds, which have no such endpoint: about four characters a token", async () => {
    const anthropic = new Anthropic({ baseURL: t.gatewayUrl, apiKey: g.key, maxRetries: 0 });
    g.openai.reset();
    local.reset();
    // "Be brief." and "Hello, world!": 22 characters, so 6 tokens.
    expect(await anthropic.messages.countTokens({ ...request, model: "gpt-count" })).toEqual({ input_tokens: 6 });
    expect(await anthropic.messages.countTokens({ ...request, model: "local-count" })).toEqual({ input_tokens: 6 });
    // With tools, their JSON counts too: 22 + 101 characters, so 31 tokens.
    const tools = [{ name: "get_weather", description: "The weather", input_schema: { type: "object" as const, properties: {} } }];
    expect(JSON.stringify(tools)).toHaveLength(101);
    expect(await anthropic.messages.countTokens({ ...request, model: "gpt-count", tools })).toEqual({ input_tokens: 31 });
    expect([g.openai.requests.length, local.requests.length]).toEqual([0, 0]);
  });
});

describe("images, by base64 and by URL, in every direction", () => {
  it("reach each provider as its own format's image parts (the fakes say how many they saw)", async () => {
    const anthropic = new Anthropic({ baseURL: t.gatewayUrl, apiKey: g.key, maxRetries: 0 });
    const openai = new OpenAI({ baseURL: `${t.gatewayUrl}/v1`, apiKey: g.key, maxRetries: 0 });
    const base64 = { type: "base64" as const, media_type: "image/png" as const, data: TINY_PNG_BASE64 };
    for (const model of ["gpt-image-in", "local-image-in"]) {
      const message = await anthropic.messages.create({
        model,
        max_tokens: 64,
        messages: [{ role: "user", content: [{ type: "text", text: "What is this?" }, { type: "image", source: base64 }, { type: "image", source: { type: "url", url: "https://example.com/cat.png" } }] }],
      });
      expect(message.content).toEqual([{ type: "text", text: `Hello from ${model.startsWith("gpt") ? "openai" : "compatible"}. Saw 2 images.` }]);
    }
    const fromResponses = await openai.responses.create({
      model: "claude-image-in",
      input: [{ role: "user", content: [{ type: "input_text", text: "What is this?" }, { type: "input_image", image_url: `data:image/png;base64,${TINY_PNG_BASE64}`, detail: "auto" }] }],
    });
    expect(fromResponses.output_text).toBe("Hello from anthropic. Saw 1 image.");
    const sent = g.anthropic.requests.at(-1)!.body as { messages: { content: unknown[] }[] };
    expect(sent.messages[0]!.content[1]).toEqual({ type: "image", source: base64 });
    const fromChat = await openai.chat.completions.create({
      model: "claude-image-in",
      messages: [{ role: "user", content: [{ type: "text", text: "What is this?" }, { type: "image_url", image_url: { url: "https://example.com/cat.png" } }] }],
    });
    expect(fromChat.choices[0]!.message.content).toBe("Hello from anthropic. Saw 1 image.");
  });
});

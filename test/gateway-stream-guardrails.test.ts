import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";
import { fakeModel, type FakeProvider } from "./support/fake-providers.ts";
import { setUpGateway, type GatewayFixture } from "./support/gateway-setup.ts";

/**
 * Output guardrails on streams (stream-guard.ts), with the default window of 64 characters: a
 * PII guardrail on the output stage that blocks. Answers are 300 characters in six text events of
 * 50 (the fake provider splits its text evenly), so the hold-back can be worked out by hand:
 * event k (ending at 50k) goes out once the text is read to 50k + 64, that is once event k + 2 has
 * arrived (a window ends at the last whitespace, so at 50(k + 2) - 1 or so).
 */

let t: TestApp;
let g: GatewayFixture;

beforeAll(async () => {
  t = await startTestApp();
  g = await setUpGateway(t);
  await t.app.gateway!.detectors.ready;
  const res = await g.admin("POST", "/v1/gateway/guardrails", { body: { kind: "pii", stage: "output" } });
  expect(res.status).toBe(201);
  await t.app.gateway!.watcher.reload();
});
afterAll(async () => {
  await g?.close();
  await t?.stop();
});

const WORDS = "The forecast for the coast is clear skies with a light breeze from the west and calm seas. ";
/** Ordinary words, exactly `n` characters, ending with a space. */
const filler = (n: number) => `${WORDS.repeat(Math.ceil(n / WORDS.length)).slice(0, n - 1)} `;

const CARD = "4111 1111 1111 1111";
/**
 * 300 characters; the card at 190–209 spans the fourth and fifth of six events (150–200,
 * 200–250). The detector wants a word that says it is a card near a number of this shape.
 */
const WITH_CARD = `${filler(178)}card number ${CARD} ${filler(90)}`;
const CLEAN = filler(300);
/** The text the caller has when the card is found: the first two events. */
const RELEASED = WITH_CARD.slice(0, 100);
const BLOCKED = "Detected high-risk PII entities: CREDIT_CARD";

const PATHS = { messages: "/v1/messages", responses: "/v1/responses", chat: "/v1/chat/completions" } as const;
type Endpoint = keyof typeof PATHS;

function bodyOf(endpoint: Endpoint, model: string): Record<string, unknown> {
  if (endpoint === "messages") return { model, max_tokens: 256, stream: true, messages: [{ role: "user", content: "Weather?" }] };
  if (endpoint === "responses") return { model, stream: true, input: "Weather?" };
  return { model, stream: true, messages: [{ role: "user", content: "Weather?" }] };
}

async function throughGateway(endpoint: Endpoint, body: unknown, requestId?: string): Promise<{ status: number; text: string }> {
  const res = await fetch(t.gatewayUrl + PATHS[endpoint], {
    method: "POST",
    headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json", ...(requestId ? { "x-request-id": requestId } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

async function direct(fake: FakeProvider, endpoint: Endpoint, body: unknown): Promise<string> {
  const auth: Record<string, string> =
    fake.kind === "anthropic" ? { "x-api-key": fake.apiKey, "anthropic-version": "2023-06-01" } : { authorization: `Bearer ${fake.apiKey}` };
  const res = await fetch(fake.url + PATHS[endpoint], { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify(body) });
  return res.text();
}

async function logRow(requestId: string): Promise<{ status: number; guardrail_verdict: string | null }> {
  await t.app.gateway!.requestLog.flush();
  const [row] = await t.app.orm.em
    .fork()
    .execute<{ status: number; guardrail_verdict: string | null }[]>("select status, guardrail_verdict from gateway_request_log where request_id = ?", [requestId]);
  return row!;
}

async function thrown(work: () => Promise<unknown>): Promise<unknown> {
  try {
    await work();
  } catch (err) {
    return err;
  }
  throw new Error("the call succeeded; an error was expected");
}

const anthropic = () => new Anthropic({ baseURL: t.gatewayUrl, apiKey: g.key, maxRetries: 0 });
const openai = () => new OpenAI({ baseURL: `${t.gatewayUrl}/v1`, apiKey: g.key, maxRetries: 0 });

describe("a clean stream passes unchanged", () => {
  it.each([
    ["messages", "claude-x"],
    ["responses", "gpt-x"],
    ["chat", "gpt-x"],
  ] as const)("%s: the same bytes as the provider's, and the log says the guardrail passed", async (endpoint, base) => {
    const body = bodyOf(endpoint, fakeModel(base, { text: CLEAN, events: 6 }));
    const fake = endpoint === "messages" ? g.anthropic : g.openai;
    const through = await throughGateway(endpoint, body, `clean-${endpoint}`);
    expect(through.status).toBe(200);
    expect(through.text).toBe(await direct(fake, endpoint, body));
    expect(await logRow(`clean-${endpoint}`)).toEqual({ status: 200, guardrail_verdict: "pii:pass" });
  });
});

describe("a card split across two events is caught before any of it is sent", () => {
  it("messages, through the Anthropic SDK: the first two events' text, then the error event with the reason", async () => {
    const stream = await anthropic().messages.create(bodyOf("messages", fakeModel("claude-x", { text: WITH_CARD, events: 6 })) as unknown as Anthropic.MessageCreateParamsStreaming);
    let text = "";
    const err = await thrown(async () => {
      for await (const event of stream) if (event.type === "content_block_delta" && event.delta.type === "text_delta") text += event.delta.text;
    });
    expect(text).toBe(RELEASED);
    if (!(err instanceof Anthropic.APIError)) throw err;
    expect(err.error).toEqual({ type: "error", error: { type: "api_error", message: BLOCKED } });
  });

  it("messages, on the wire: the error event ends the stream, and the log says the output was blocked", async () => {
    const body = bodyOf("messages", fakeModel("claude-x", { text: WITH_CARD, events: 6 }));
    const through = await throughGateway("messages", body, "blocked-messages");
    const events = through.text.split("\n\n").filter(Boolean);
    expect(events.map((e) => e.split("\n")[0])).toEqual([
      "event: message_start",
      "event: content_block_start",
      "event: content_block_delta",
      "event: content_block_delta",
      "event: error",
    ]);
    expect(events.at(-1)).toBe(`event: error\ndata: ${JSON.stringify({ type: "error", error: { type: "api_error", message: BLOCKED } })}`);
    expect(await logRow("blocked-messages")).toEqual({ status: 200, guardrail_verdict: "pii:blocked:output" });
  });

  it("responses, through the OpenAI SDK: the error event carries the next sequence number", async () => {
    const stream = await openai().responses.create(bodyOf("responses", fakeModel("gpt-x", { text: WITH_CARD, events: 6 })) as unknown as OpenAI.Responses.ResponseCreateParamsStreaming);
    let text = "";
    const types: string[] = [];
    const err = await thrown(async () => {
      for await (const event of stream) {
        types.push(event.type);
        if (event.type === "response.output_text.delta") text += event.delta;
      }
    });
    expect(text).toBe(RELEASED);
    expect(types).toEqual(["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.delta"]);
    if (!(err instanceof OpenAI.APIError)) throw err;
    expect(err.error).toEqual({ type: "error", code: null, message: BLOCKED, param: null, sequence_number: 6 });
  });

  it("chat completions, through the OpenAI SDK", async () => {
    const stream = await openai().chat.completions.create(bodyOf("chat", fakeModel("gpt-x", { text: WITH_CARD, events: 6 })) as unknown as OpenAI.Chat.ChatCompletionCreateParamsStreaming);
    let text = "";
    const err = await thrown(async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    });
    expect(text).toBe(RELEASED);
    if (!(err instanceof OpenAI.APIError)) throw err;
    expect(err.message).toBe(BLOCKED);
  });

  it("a translated stream (chat completions to an Anthropic model) is checked the same way", async () => {
    const stream = await openai().chat.completions.create(bodyOf("chat", fakeModel("claude-x", { text: WITH_CARD, events: 6 })) as unknown as OpenAI.Chat.ChatCompletionCreateParamsStreaming);
    let text = "";
    const err = await thrown(async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    });
    expect(text).toBe(RELEASED);
    if (!(err instanceof OpenAI.APIError)) throw err;
    expect(err.message).toBe(BLOCKED);
  });

  it("a short answer is read whole at its block's end: none of its text goes out", async () => {
    const body = bodyOf("messages", fakeModel("claude-x", { text: `Your card: ${CARD}. Keep it safe.`, events: 4 }));
    const through = await throughGateway("messages", body, "blocked-early");
    expect(through.status).toBe(200);
    // The events before the text are not held: they carry nothing to check.
    expect(through.text.split("\n\n").filter(Boolean).map((e) => e.split("\n")[0])).toEqual(["event: message_start", "event: content_block_start", "event: error"]);
    expect(await logRow("blocked-early")).toEqual({ status: 200, guardrail_verdict: "pii:blocked:output" });
  });
});

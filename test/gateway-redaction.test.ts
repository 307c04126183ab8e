import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";
import { fakeModel } from "./support/fake-providers.ts";
import { setUpGateway, type GatewayFixture } from "./support/gateway-setup.ts";

/**
 * PII guardrails that redact (action "redact"), on input and output: the provider sees
 * placeholders instead of the entities, so does the caller of an answer, streamed or not; the
 * request log says which types and how many, never the values.
 */

let t: TestApp;
let g: GatewayFixture;
const TYPES = ["CREDIT_CARD", "EMAIL_ADDRESS", "US_SSN"];

beforeAll(async () => {
  t = await startTestApp();
  g = await setUpGateway(t);
  await t.app.gateway!.detectors.ready;
  for (const stage of ["input", "output"]) {
    const res = await g.admin("POST", "/v1/gateway/guardrails", { body: { kind: "pii", stage, action: "redact", piiEntityTypes: TYPES } });
    expect(res.status).toBe(201);
  }
  await t.app.gateway!.watcher.reload();
});
afterAll(async () => {
  await g?.close();
  await t?.stop();
});

const anthropic = (requestId: string) => new Anthropic({ baseURL: t.gatewayUrl, apiKey: g.key, maxRetries: 0, defaultHeaders: { "x-request-id": requestId } });
const openai = (requestId: string) => new OpenAI({ baseURL: `${t.gatewayUrl}/v1`, apiKey: g.key, maxRetries: 0, defaultHeaders: { "x-request-id": requestId } });

interface LogRow {
  guardrail_verdict: string | null;
  redactions: unknown;
}

async function logRow(requestId: string): Promise<LogRow> {
  await t.app.gateway!.requestLog.flush();
  const [row] = await t.app.orm.em.fork().execute<LogRow[]>("select guardrail_verdict, redactions from gateway_request_log where request_id = ?", [requestId]);
  return row!;
}

const CARD = "4111 1111 1111 1111";
const WORDS = "The forecast for the coast is clear skies with a light breeze from the west and calm seas. ";
const filler = (n: number) => `${WORDS.repeat(Math.ceil(n / WORDS.length)).slice(0, n - 1)} `;

describe("input", () => {
  it("the provider sees placeholders in every piece of caller text; the call succeeds; the log counts by type", async () => {
    const before = g.anthropic.requests.length;
    const answer = await anthropic("redact-in").messages.create({
      model: "claude-x",
      max_tokens: 64,
      system: "Write to ops@example.com when unsure.",
      messages: [
        { role: "user", content: `Charge my card ${CARD} and mail jane@example.org.` },
        { role: "assistant", content: "Done." },
        { role: "user", content: [{ type: "text", text: "My SSN is 536-22-8471, keep it." }] },
      ],
    });
    expect(answer.content).toEqual([{ type: "text", text: "Hello from anthropic", citations: null }]);
    expect(g.anthropic.requests.length).toBe(before + 1);
    expect(g.anthropic.requests.at(-1)!.body).toMatchObject({
      system: "Write to [EMAIL_ADDRESS] when unsure.",
      messages: [
        { role: "user", content: "Charge my card [CREDIT_CARD] and mail [EMAIL_ADDRESS]." },
        { role: "assistant", content: "Done." },
        { role: "user", content: [{ type: "text", text: "My SSN is [US_SSN], keep it." }] },
      ],
    });
    expect(await logRow("redact-in")).toEqual({
      guardrail_verdict: "pii:redacted,pii:pass",
      redactions: { input: { CREDIT_CARD: 1, EMAIL_ADDRESS: 2, US_SSN: 1 } },
    });
    // The request-log API lists them, input first, by type.
    const listed = await g.admin("GET", "/v1/gateway/request-log?requestId=redact-in");
    expect((listed.body as { items: { redactions: unknown }[] }).items[0]!.redactions).toEqual([
      { stage: "input", entityType: "CREDIT_CARD", count: 1 },
      { stage: "input", entityType: "EMAIL_ADDRESS", count: 2 },
      { stage: "input", entityType: "US_SSN", count: 1 },
    ]);
  });

  it("text without entities goes to the provider byte for byte", async () => {
    const raw = '{"model":"gpt-x",  "input":"Plain words, nothing to hide."}';
    const res = await fetch(`${t.gatewayUrl}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json", "x-request-id": "redact-none" },
      body: raw,
    });
    expect(res.status).toBe(200);
    expect(g.openai.requests.at(-1)!.raw).toBe(raw);
    expect(await logRow("redact-none")).toEqual({ guardrail_verdict: "pii:pass,pii:pass", redactions: null });
  });

  it("a body too large for the event loop is redacted by a worker, the rest of it untouched", async () => {
    const long = filler(80 * 1024);
    await openai("redact-large").responses.create({ model: "gpt-x", input: [{ role: "user", content: `${long}Reach me at jane@example.org please.` }] });
    const sent = g.openai.requests.at(-1)!.body as { input: { content: string }[] };
    expect(sent.input[0]!.content).toBe(`${long}Reach me at [EMAIL_ADDRESS] please.`);
    expect(await logRow("redact-large")).toMatchObject({ redactions: { input: { EMAIL_ADDRESS: 1 } } });
  });
});

describe("output, not streamed", () => {
  it("messages: the caller gets the answer with placeholders", async () => {
    const answer = await anthropic("redact-out").messages.create({
      model: fakeModel("claude-x", { text: `Your card ${CARD} is on file; receipts go to jane@example.org.` }),
      max_tokens: 64,
      messages: [{ role: "user", content: "What is on file?" }],
    });
    expect(answer.content).toEqual([{ type: "text", text: "Your card [CREDIT_CARD] is on file; receipts go to [EMAIL_ADDRESS].", citations: null }]);
    expect(await logRow("redact-out")).toEqual({ guardrail_verdict: "pii:pass,pii:redacted", redactions: { output: { CREDIT_CARD: 1, EMAIL_ADDRESS: 1 } } });
  });

  it("chat completions: the choice's content", async () => {
    const answer = await openai("redact-chat").chat.completions.create({
      model: fakeModel("gpt-x", { text: "SSN on record: 536-22-8471." }),
      messages: [{ role: "user", content: "What is on record?" }],
    });
    expect(answer.choices[0]!.message.content).toBe("SSN on record: [US_SSN].");
  });
});

describe("output, streamed: an entity split across events is replaced in flight", () => {
  // 300 characters in six events of 50: the card (after its context word) spans the fourth and fifth.
  const text = `${filler(178)}card number ${CARD} ${filler(90)}`;
  const redacted = `${filler(178)}card number [CREDIT_CARD] ${filler(90)}`;

  it("messages, through the Anthropic SDK", async () => {
    const stream = anthropic("redact-stream").messages.stream({
      model: fakeModel("claude-x", { text, events: 6 }),
      max_tokens: 256,
      messages: [{ role: "user", content: "Weather?" }],
    });
    const deltas: string[] = [];
    stream.on("text", (delta) => deltas.push(delta));
    const final = await stream.finalMessage();
    expect(deltas.join("")).toBe(redacted);
    // The piece that held the card's start carries the placeholder; the next one lost the card's end.
    expect(deltas[3]).toBe(`${text.slice(150, 190)}[CREDIT_CARD]`);
    expect(deltas[4]).toBe(text.slice(209, 250));
    expect(final.content).toEqual([{ type: "text", text: redacted, citations: null }]);
    expect(await logRow("redact-stream")).toEqual({ guardrail_verdict: "pii:pass,pii:redacted", redactions: { output: { CREDIT_CARD: 1 } } });
  });

  it("responses, through the OpenAI SDK: the done events and the final response carry the placeholder too", async () => {
    const stream = openai("redact-responses").responses.stream({ model: fakeModel("gpt-x", { text, events: 6 }), input: "Weather?" });
    let deltas = "";
    const done: string[] = [];
    for await (const event of stream) {
      if (event.type === "response.output_text.delta") deltas += event.delta;
      if (event.type === "response.output_text.done") done.push(event.text);
    }
    const final = await stream.finalResponse();
    expect({ deltas, done, final: final.output_text }).toEqual({ deltas: redacted, done: [redacted], final: redacted });
  });

  it("chat completions translated to an Anthropic model", async () => {
    const stream = await openai("redact-translated").chat.completions.create({
      model: fakeModel("claude-x", { text, events: 6 }),
      stream: true,
      messages: [{ role: "user", content: "Weather?" }],
    });
    let content = "";
    for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? "";
    expect(content).toBe(redacted);
  });
});

import type { JsonObject } from "@bufbuild/protobuf";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { SseEvent } from "../src/gateway/providers/sse.ts";
import { StreamMeter } from "../src/gateway/usage/stream-meter.ts";
import { TrafficRows, trafficRowConfig, type PipelineSink, type TrafficCapture } from "../src/gateway/usage/traffic-rows.ts";
import { MAX_ROW_TEXT_CHARS } from "../src/gateway/usage/transcript.ts";
import { invalidArgument, notFound } from "../src/platform/errors.ts";
import type { Logger } from "../src/platform/logger.ts";
import { setUpWaitMs, until } from "./support/wait.ts";

/**
 * The pipeline-row writer on its own, with sinks that record what they are given: batching per
 * pipeline, what each refusal of the row store does, the buffer's bounds, and the rows' content.
 * test/gateway-traffic.test.ts runs the same through the gateway and the real row store.
 */

const A = "00000000-0000-4000-8000-00000000000a";
const B = "00000000-0000-4000-8000-00000000000b";

function capture(requestId: string, overrides: Partial<TrafficCapture> = {}): TrafficCapture {
  return {
    pipelineId: A,
    requestId,
    sessionId: null,
    time: new Date(1_767_225_600_500),
    endpoint: "messages",
    keyId: "00000000-0000-4000-8000-0000000000ee",
    userId: null,
    model: "claude-x",
    provider: "anthropic",
    status: 200,
    errorType: null,
    latencyMs: 12,
    ttfbMs: 10,
    usage: { inputTokens: 3, outputTokens: 4 },
    guardrailVerdict: null,
    body: { model: "claude-x", max_tokens: 5, messages: [{ role: "user", content: "Hi" }] },
    output: undefined,
    ...overrides,
  };
}

interface Line {
  level: number;
  msg: string;
  [field: string]: unknown;
}

function capturedLogger(): { logger: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const logger = pino({ level: "warn" }, { write: (line: string) => void lines.push(JSON.parse(line) as Line) });
  return { logger, lines };
}

interface Call {
  pipelineId: string;
  config: JsonObject;
  ids: string[];
}

/** A sink that records its calls; `fail` may throw for a call instead. */
function recordingSink(fail?: (pipelineId: string, rows: JsonObject[]) => void): { sink: PipelineSink; calls: Call[] } {
  const calls: Call[] = [];
  const sink: PipelineSink = async (pipelineId, config, batch) => {
    const rows = batch.map((row) => JSON.parse(row.json) as JsonObject);
    fail?.(pipelineId, rows);
    calls.push({ pipelineId, config, ids: rows.map((row) => String(row.inferenceId)) });
  };
  return { sink, calls };
}

/** A timer an hour away: only flush() and close() write. */
const quiet = { flushIntervalMs: 3_600_000 };

/** The error pg gives when nothing listens on the database's port. */
function connectionRefused(): Error {
  return Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" });
}

describe("the pipeline-row writer", () => {
  it("writes per pipeline, at most 1,000 rows a call, in order, with the data-stream config", async () => {
    const { sink, calls } = recordingSink();
    const rows = new TrafficRows({ sink, logger: capturedLogger().logger, ...quiet });
    const ids = { [A]: [] as string[], [B]: [] as string[] };
    for (let i = 0; i < 2_510; i++) {
      const pipelineId = i % 251 === 0 ? B : A;
      const id = `r-${i}`;
      ids[pipelineId].push(id);
      rows.record(capture(id, { pipelineId }));
    }
    await rows.flush();
    expect(calls.map((c) => [c.pipelineId, c.ids.length])).toEqual([
      [B, 10],
      [A, 1000],
      [A, 1000],
      [A, 500],
    ]);
    expect(calls.filter((c) => c.pipelineId === A).flatMap((c) => c.ids)).toEqual(ids[A]);
    expect(calls[0]!.ids).toEqual(ids[B]);
    expect(calls.every((c) => c.config === trafficRowConfig)).toBe(true);
    expect(trafficRowConfig).toEqual({
      outputColumnName: "output",
      inputVariableNames: ["input"],
      latencyColumnName: "latency",
      timestampColumnName: "timestamp",
      inferenceIdColumnName: "inferenceId",
      numOfTokenColumnName: "tokens",
      userIdColumnName: "userId",
      sessionIdColumnName: "sessionId",
    });
    expect([rows.written, rows.dropped, rows.buffered]).toEqual([2_510, 0, 0]);
    await rows.close();
  });

  it("writes whole batches as soon as they are buffered, without waiting for its timer; a flush writes the rest", async () => {
    const { sink, calls } = recordingSink();
    const rows = new TrafficRows({ sink, logger: capturedLogger().logger, ...quiet });
    for (let i = 0; i < 2_500; i++) rows.record(capture(`r-${i}`));
    await until(async () => rows.written === 2_000, "two whole batches written", setUpWaitMs);
    expect(calls.map((c) => c.ids.length)).toEqual([1000, 1000]);
    expect(rows.buffered).toBe(500);
    await rows.flush();
    expect(calls.map((c) => c.ids.length)).toEqual([1000, 1000, 500]);
    expect(calls.flatMap((c) => c.ids)).toEqual(Array.from({ length: 2_500 }, (_, i) => `r-${i}`));
    await rows.close();
  });

  it("drops the rows of a pipeline that is gone, one log line per batch, and counts them; other pipelines' rows are written", async () => {
    const { logger, lines } = capturedLogger();
    const { sink, calls } = recordingSink((pipelineId) => {
      if (pipelineId === A) throw notFound("Inference pipeline not found");
    });
    const rows = new TrafficRows({ sink, logger, ...quiet });
    for (let i = 0; i < 1_500; i++) rows.record(capture(`a-${i}`));
    rows.record(capture("b-0", { pipelineId: B }));
    await rows.flush();
    expect(calls.map((c) => [c.pipelineId, c.ids])).toEqual([[B, ["b-0"]]]);
    expect([rows.written, rows.dropped, rows.buffered]).toEqual([1, 1_500, 0]);
    const dropped = lines.filter((l) => l.msg === "pipeline rows dropped: the inference pipeline is gone, or no row store is configured");
    expect(dropped.map((l) => [l.pipelineId, l.count])).toEqual([
      [A, 1000],
      [A, 500],
    ]);
    // Nothing is retried.
    await rows.flush();
    expect(calls).toHaveLength(1);
    await rows.close();
  });

  it("finds refused rows by halving the batch, drops each alone with a log line, and writes the rest", async () => {
    const { logger, lines } = capturedLogger();
    const bad = new Set(["r-3", "r-4", "r-17"]);
    const { sink, calls } = recordingSink((_pipelineId, batch) => {
      const refused = batch.find((row) => bad.has(String(row.inferenceId)));
      if (refused) throw invalidArgument(`rows[0].inferenceId is refused`);
    });
    const rows = new TrafficRows({ sink, logger, ...quiet });
    for (let i = 0; i < 25; i++) rows.record(capture(`r-${i}`));
    await rows.flush();
    const written = calls.flatMap((c) => c.ids);
    expect(written).toEqual(Array.from({ length: 25 }, (_, i) => `r-${i}`).filter((id) => !bad.has(id)));
    expect([rows.written, rows.dropped, rows.buffered]).toEqual([22, 3, 0]);
    const refused = lines.filter((l) => l.msg === "pipeline row refused by the row store; dropped");
    expect(refused.map((l) => (l.inferenceIds as string[])[0]).sort()).toEqual([...bad].sort());
    await rows.close();
  });

  it("keeps rows while the row store is away (the oldest dropped past the bound, logged with the count), and writes them once it is back", async () => {
    const { logger, lines } = capturedLogger();
    let down = true;
    const { sink, calls } = recordingSink(() => {
      if (down) throw connectionRefused();
    });
    const rows = new TrafficRows({ sink, logger, ...quiet, maxBuffered: 5 });
    for (let i = 0; i < 8; i++) rows.record(capture(`r-${i}`));
    await rows.flush();
    expect([rows.written, rows.dropped, rows.buffered]).toEqual([0, 3, 5]);
    expect(lines.map((l) => [l.msg, l.dropped, l.buffered])).toEqual([["pipeline rows write failed; will retry", 3, 5]]);
    down = false;
    await rows.flush();
    expect(calls.flatMap((c) => c.ids)).toEqual(["r-3", "r-4", "r-5", "r-6", "r-7"]);
    expect([rows.written, rows.dropped, rows.buffered]).toEqual([5, 3, 0]);
    expect(lines.at(-1)).toMatchObject({ msg: "pipeline rows dropped while the row store was unavailable", dropped: 3 });
    await rows.close();
  });

  it("bounds its buffer in bytes too: large rows push the oldest out", async () => {
    const { sink } = recordingSink(() => {
      throw connectionRefused();
    });
    const rows = new TrafficRows({ sink, logger: capturedLogger().logger, ...quiet, maxBufferedBytes: 1024 * 1024 });
    const long = "x".repeat(MAX_ROW_TEXT_CHARS);
    // Each row holds about 128 KiB of text twice over (input and messages): 2 × 2 bytes a character.
    for (let i = 0; i < 10; i++) rows.record(capture(`r-${i}`, { body: { messages: [{ role: "user", content: long }] } }));
    await rows.flush();
    expect(rows.buffered).toBe(3);
    expect(rows.dropped).toBe(7);
    await rows.close();
  });

  it("counts and logs the rows the row store has not taken when it closes", async () => {
    const { logger, lines } = capturedLogger();
    const { sink } = recordingSink(() => {
      throw connectionRefused();
    });
    const rows = new TrafficRows({ sink, logger, ...quiet });
    rows.record(capture("r-0"));
    rows.record(capture("r-1"));
    await rows.close();
    expect([rows.written, rows.dropped, rows.buffered]).toEqual([0, 2, 0]);
    expect(lines.at(-1)).toMatchObject({ msg: "pipeline rows lost at shutdown: the row store did not take them", lost: 2 });
  });

  it("without a row store, drops and counts the rows, and says why once", async () => {
    const { logger, lines } = capturedLogger();
    const rows = new TrafficRows({ sink: undefined, logger, ...quiet });
    rows.record(capture("r-0"));
    rows.record(capture("r-1"));
    await rows.flush();
    expect([rows.written, rows.dropped, rows.buffered]).toEqual([0, 2, 0]);
    expect(lines.filter((l) => l.msg.startsWith("a gateway key is bound to an inference pipeline, but this process has no row store"))).toHaveLength(1);
    await rows.close();
  });
});

/** The rows a writer makes of captures, through a sink that keeps them. */
async function rowsOf(...captures: TrafficCapture[]): Promise<JsonObject[]> {
  const kept: JsonObject[] = [];
  const sink: PipelineSink = async (_id, _config, batch) => {
    for (const row of batch) {
      const parsed = JSON.parse(row.json) as JsonObject;
      // The sink is told the row's inference ID and timestamp beside its JSON, as the row holds them.
      expect([row.inferenceId, row.timestamp]).toEqual([parsed.inferenceId, parsed.timestamp]);
      kept.push(parsed);
    }
  };
  const rows = new TrafficRows({ sink, logger: capturedLogger().logger, ...quiet });
  for (const c of captures) rows.record(c);
  await rows.close();
  return kept;
}

const marker = (kept: number, total: number) => ` [cut by Warden: ${kept} of ${total} characters kept]`;

describe("what a row holds", () => {
  it("a messages request: text messages, the system prompt, placeholders for images and files, tool calls as text", async () => {
    const base64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
    const body = {
      model: "claude-x",
      max_tokens: 64,
      system: [{ type: "text", text: "Be brief." }, { type: "text", text: "Be kind." }],
      messages: [
        { role: "user", content: [{ type: "text", text: "What is this?" }, { type: "image", source: { type: "base64", media_type: "image/png", data: base64 } }] },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "lookup", input: { q: "png" } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: [{ type: "text", text: "A PNG." }] }, { type: "document", source: { type: "base64", data: base64 } }] },
        { role: "user", content: "And now?" },
      ],
    };
    const answer = { answer: { type: "message", content: [{ type: "text", text: "A pixel." }, { type: "text", text: "Tiny." }], usage: { input_tokens: 3, output_tokens: 4 } } };
    const [row] = await rowsOf(
      capture("req-1", { body, output: answer, sessionId: "s-1", userId: "00000000-0000-4000-8000-0000000000cc", guardrailVerdict: "pii:pass,prompt_injection:pass" }),
    );
    expect(row).toEqual({
      inferenceId: "req-1",
      timestamp: 1_767_225_600.5,
      input: "And now?",
      messages: [
        { role: "user", content: "What is this?\n[image]" },
        { role: "assistant", content: "[tool_use: lookup]" },
        { role: "user", content: "A PNG.\n[document]" },
        { role: "user", content: "And now?" },
      ],
      system: "Be brief.\nBe kind.",
      instructions: null,
      output: "A pixel.\nTiny.",
      model: "claude-x",
      provider: "anthropic",
      endpoint: "messages",
      status: 200,
      errorType: null,
      latency: 12,
      timeToFirstToken: 10,
      inputTokens: 3,
      outputTokens: 4,
      tokens: 7,
      guardrails: ["pii:pass", "prompt_injection:pass"],
      userId: "00000000-0000-4000-8000-0000000000cc",
      sessionId: "s-1",
      keyId: "00000000-0000-4000-8000-0000000000ee",
    });
    expect(JSON.stringify(row)).not.toContain(base64);
  });

  it("a responses request: instructions apart, input items with their roles, function calls and outputs", async () => {
    const body = {
      model: "gpt-x",
      instructions: "You are a test.",
      input: [
        { role: "developer", content: "Answer in French." },
        { role: "user", content: [{ type: "input_text", text: "Look:" }, { type: "input_image", image_url: "data:image/png;base64,AAAA" }] },
        { type: "function_call", call_id: "c1", name: "weather", arguments: "{}" },
        { type: "function_call_output", call_id: "c1", output: "Sunny" },
        { role: "user", content: [{ type: "input_file", file_data: "data:application/pdf;base64,AAAA" }] },
      ],
    };
    const [row] = await rowsOf(capture("req-2", { endpoint: "responses", body, output: { kept: "Il fait beau.", total: 13 } }));
    expect(row).toMatchObject({
      input: "[input_file]",
      messages: [
        { role: "developer", content: "Answer in French." },
        { role: "user", content: "Look:\n[input_image]" },
        { role: "assistant", content: "[function_call: weather]" },
        { role: "tool", content: "Sunny" },
        { role: "user", content: "[input_file]" },
      ],
      system: null,
      instructions: "You are a test.",
      output: "Il fait beau.",
      endpoint: "responses",
    });
    const [plain] = await rowsOf(capture("req-3", { endpoint: "responses", body: { model: "gpt-x", input: "Hello" } }));
    expect(plain).toMatchObject({ input: "Hello", messages: [{ role: "user", content: "Hello" }], instructions: null, output: null });
  });

  it("embeddings and images: the texts or the prompt as input, no messages, no output", async () => {
    const [embedding, image] = await rowsOf(
      capture("e", { endpoint: "embeddings", body: { model: "e", input: ["a", "b", [1, 2]] } }),
      capture("i", { endpoint: "images", body: { model: "i", prompt: "a cat" } }),
    );
    expect(embedding).toMatchObject({ input: "a\nb\n[tokens]", messages: null, output: null, endpoint: "embeddings" });
    expect(image).toMatchObject({ input: "a cat", messages: null, output: null, endpoint: "images" });
  });

  it("a refused request with no body read: nulls, and no tokens", async () => {
    const [row] = await rowsOf(
      capture("refused", { body: undefined, model: null, provider: null, status: 503, errorType: "api_error", ttfbMs: null, usage: undefined }),
    );
    expect(row).toMatchObject({
      input: null,
      messages: null,
      system: null,
      output: null,
      model: null,
      provider: null,
      status: 503,
      errorType: "api_error",
      timeToFirstToken: null,
      inputTokens: 0,
      outputTokens: 0,
      tokens: 0,
      guardrails: null,
    });
  });

  it("caps each text at 64 Ki characters with a marker, and the messages together, however many there are", async () => {
    const long = "a".repeat(100_000);
    const many = Array.from({ length: 100_000 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: "hello" }));
    const [one, two] = await rowsOf(
      capture("long", { body: { system: long, messages: [{ role: "user", content: long }] }, output: { kept: long.slice(0, MAX_ROW_TEXT_CHARS), total: 100_000 } }),
      capture("many", { body: { messages: many } }),
    );
    const cut = "a".repeat(MAX_ROW_TEXT_CHARS) + marker(MAX_ROW_TEXT_CHARS, 100_000);
    expect(one).toMatchObject({ input: cut, system: cut, output: cut, messages: [{ role: "user", content: cut }] });
    const messages = two!.messages as { role: string; content: string }[];
    const kept = messages.length;
    expect(kept).toBeLessThan(4_000);
    expect(messages.slice(0, -1).every((m, i) => m.content === "hello" && m.role === (i % 2 ? "assistant" : "user"))).toBe(true);
    expect(messages.at(-1)!.content).toBe(`hello [cut by Warden: ${100_000 - kept} more messages not kept]`);
  });

  it("takes out what the row store cannot hold: NUL characters and halves of surrogate pairs", async () => {
    const [row] = await rowsOf(capture("odd\u0000id", { body: { messages: [{ role: "user", content: "a\u0000b\ud800c" }] }, sessionId: "s\u0000" }));
    expect(row).toMatchObject({ inferenceId: "oddid", input: "ab\ufffdc", sessionId: "s" });
  });

  it("keeps a stream's text as it passes, up to the cap, counting all of it", () => {
    const meter = new StreamMeter(10, 5);
    const delta = (text: string) =>
      new SseEvent(Buffer.from(`event: content_block_delta\ndata: ${JSON.stringify({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } })}\n\n`));
    meter.observe(delta("Hel"));
    meter.observe(delta("lo, world"));
    expect(meter.text).toEqual({ kept: "Hello", total: 12 });
    const openai = new StreamMeter(10, 100);
    openai.observe(new SseEvent(Buffer.from(`event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"Hi"}\n\n`)));
    expect(openai.text).toEqual({ kept: "Hi", total: 2 });
    // Without a cap (a key with no pipeline), nothing is kept.
    const off = new StreamMeter(10);
    off.observe(delta("Hello"));
    expect(off.text).toEqual({ kept: "", total: 5 });
  });
});

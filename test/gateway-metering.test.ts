import Anthropic from "@anthropic-ai/sdk";
import { randomUUID } from "node:crypto";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_REPORTED_TOKENS, StreamUsage, usageFrom } from "../src/gateway/usage/provider-usage.ts";
import { RequestLog, type RequestLogEntry } from "../src/gateway/usage/request-log.ts";
import { createLogger, type Logger } from "../src/platform/logger.ts";
import { SseEvent } from "../src/gateway/providers/sse.ts";
import { startTestApp, type TestApp } from "./support/app.ts";
import { fakeModel } from "./support/fake-providers.ts";
import { setUpGateway, type GatewayFixture } from "./support/gateway-setup.ts";

let t: TestApp;
let g: GatewayFixture;

beforeAll(async () => {
  t = await startTestApp();
  g = await setUpGateway(t);
});
afterAll(async () => {
  await g?.close();
  await t?.stop();
});

interface Row {
  request_id: string;
  endpoint: string;
  model: string | null;
  provider: string | null;
  status: number;
  error_type: string | null;
  input_tokens: number;
  output_tokens: number;
  tokens_estimated: boolean;
  ttfb_ms: number | null;
  key_id: string | null;
}

/** Token counts are bigint, which pg returns as strings: read as float8, exact to 2^53. */
const rowColumns = `request_id, endpoint, model, provider, status, error_type, input_tokens::float8 as input_tokens,
  output_tokens::float8 as output_tokens, tokens_estimated, ttfb_ms, key_id`;

async function rowFor(requestId: string): Promise<Row> {
  await t.app.gateway!.requestLog.flush();
  const rows = await t.app.orm.em.fork().execute<Row[]>(`select ${rowColumns} from gateway_request_log where request_id = ?`, [requestId]);
  expect(rows).toHaveLength(1);
  return rows[0]!;
}

function post(path: string, requestId: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(`${t.gatewayUrl}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json", "x-request-id": requestId },
    body: JSON.stringify(body),
    signal,
  });
}

describe("the request log and token counting", () => {
  it("records a plain call with the provider's usage, and returns the caller's request ID", async () => {
    const res = await post("/v1/messages", "req-plain", { model: fakeModel("claude-x", { inputTokens: 40, outputTokens: 9 }), max_tokens: 50, messages: [{ role: "user", content: "Hi" }] });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-request-id")).toBe("req-plain");
    await res.text();
    expect(await rowFor("req-plain")).toMatchObject({
      endpoint: "messages",
      provider: "anthropic",
      status: 200,
      error_type: null,
      input_tokens: 40,
      output_tokens: 9,
      tokens_estimated: false,
      ttfb_ms: expect.any(Number),
    });
  });

  it("counts a stream from its usage events", async () => {
    const anthropic = new Anthropic({ baseURL: t.gatewayUrl, apiKey: g.key, maxRetries: 0, defaultHeaders: { "x-request-id": "req-stream" } });
    const stream = anthropic.messages.stream({ model: fakeModel("claude-x", { inputTokens: 30, outputTokens: 12 }), max_tokens: 50, messages: [{ role: "user", content: "Hi" }] });
    await stream.finalMessage();
    expect(await rowFor("req-stream")).toMatchObject({ status: 200, input_tokens: 30, output_tokens: 12, tokens_estimated: false });
  });

  it("counts nothing for an upstream error before any output", async () => {
    const res = await post("/v1/responses", "req-failed", { model: fakeModel("gpt-x", { status: 500, message: "boom" }), input: "Hi" });
    expect(res.status).toBe(502);
    await res.text();
    expect(await rowFor("req-failed")).toMatchObject({ status: 502, error_type: "api_error", input_tokens: 0, output_tokens: 0 });
  });

  it("counts what the provider reported of a stream the caller abandoned", async () => {
    const abort = new AbortController();
    const res = await post(
      "/v1/messages",
      "req-abandoned-reported",
      { model: fakeModel("claude-x", { stallAfter: 2, inputTokens: 25 }), max_tokens: 50, stream: true, messages: [{ role: "user", content: "Hi" }] },
      abort.signal,
    );
    const reader = res.body!.getReader();
    await reader.read();
    abort.abort();
    await expect(reader.read()).rejects.toThrow();
    const row = await waitForRow("req-abandoned-reported");
    expect(row).toMatchObject({ input_tokens: 25, tokens_estimated: false });
  });

  it("counts an estimate, and says so, when an abandoned stream had no usage yet", async () => {
    const abort = new AbortController();
    const res = await post(
      "/v1/responses",
      "req-abandoned-estimated",
      { model: fakeModel("gpt-x", { stallAfter: 5, text: "Hello there, world" }), input: "Hi", stream: true },
      abort.signal,
    );
    const reader = res.body!.getReader();
    await reader.read();
    abort.abort();
    await expect(reader.read()).rejects.toThrow();
    const row = await waitForRow("req-abandoned-estimated");
    expect(row.tokens_estimated).toBe(true);
    expect(row.input_tokens).toBeGreaterThan(0);
  });
});

/** The row of a request that ends after its caller left: it lands once the gateway notices. */
async function waitForRow(requestId: string): Promise<Row> {
  for (let i = 0; i < 200; i++) {
    await t.app.gateway!.requestLog.flush();
    const rows = await t.app.orm.em.fork().execute<Row[]>(`select ${rowColumns} from gateway_request_log where request_id = ?`, [requestId]);
    if (rows[0]) return rows[0];
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no request-log row for ${requestId}`);
}

describe("the usage API", () => {
  it("sums the request log by key, by model, and over a time range", async () => {
    await t.app.gateway!.requestLog.flush();
    const admin = g.admin;
    const byKey = await admin("GET", "/v1/gateway/usage?groupBy=key");
    expect(byKey.status).toBe(200);
    const keyId = (await admin("GET", "/v1/gateway/keys")).body as { items: { id: string }[] };
    const rows = (byKey.body as { items: { subject: string; requests: number; inputTokens: number; outputTokens: number; totalTokens: number; estimatedRequests: number }[] }).items;
    const mine = rows.find((r) => r.subject === keyId.items[0]!.id)!;
    const [expected] = await t.app.orm.em.fork().execute<{ n: number; input: number; output: number; est: number; used: number }[]>(
      `select count(*)::int as n, sum(input_tokens)::int as input, sum(output_tokens)::int as output, (count(*) filter (where tokens_estimated))::int as est,
              (count(*) filter (where input_tokens + output_tokens > 0))::int as used from gateway_request_log where key_id = ?`,
      [keyId.items[0]!.id],
    );
    expect(mine).toEqual({
      subject: keyId.items[0]!.id,
      name: "tests",
      requests: expected!.n,
      inputTokens: expected!.input,
      outputTokens: expected!.output,
      totalTokens: expected!.input + expected!.output,
      cachedInputTokens: 0,
      // The fake models' names carry their directives: no price is known for those that used tokens.
      costUsd: 0,
      unpricedRequests: expected!.used,
      estimatedRequests: expected!.est,
      bucketStart: null,
    });
    const byModel = await admin("GET", "/v1/gateway/usage?groupBy=model");
    expect((byModel.body as { groupBy: string; items: { subject: string }[] }).groupBy).toBe("model");
    expect((byModel.body as { items: { subject: string }[] }).items.map((r) => r.subject)).toContain(fakeModel("claude-x", { inputTokens: 40, outputTokens: 9 }));
    const past = await admin("GET", "/v1/gateway/usage?startTime=2020-01-01T00:00:00Z&endTime=2020-01-02T00:00:00Z");
    expect(past.body).toEqual({ startTime: "2020-01-01T00:00:00.000Z", endTime: "2020-01-02T00:00:00.000Z", groupBy: "key", bucket: "none", items: [] });
    const bad = await admin("GET", "/v1/gateway/usage?startTime=yesterday");
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({
      error: "startTime must be an ISO-8601 date-time, such as 2024-03-22T11:31:01Z",
      message: "startTime must be an ISO-8601 date-time, such as 2024-03-22T11:31:01Z",
      code: "invalid_argument",
    });
  });
});

describe("the request log takes whatever callers send", () => {
  it("keeps writing when a request ID is too long or a model holds a NUL character", async () => {
    const longId = "x".repeat(500);
    await (await post("/v1/responses", longId, { model: "gpt-\u0000bad", input: "Hi" })).text();
    await (await post("/v1/responses", "req-after-odd", { model: fakeModel("gpt-x"), input: "Hi" })).text();
    expect(await rowFor("req-after-odd")).toMatchObject({ status: 200 });
    expect(await rowFor("x".repeat(128))).toMatchObject({ model: "gpt-bad" });
  });
});

describe("the request log takes whatever providers report", () => {
  /** A key of its own, so that these figures stay out of the sums checked above. */
  let key: { id: string; secret: string };

  beforeAll(async () => {
    const created = await g.admin("POST", "/v1/gateway/keys", { body: { name: "huge usage" } });
    key = { id: (created.body as { id: string }).id, secret: (created.body as { secret: string }).secret };
    await t.app.gateway!.watcher.reload();
  });

  function postAs(path: string, requestId: string, body: unknown): Promise<Response> {
    return fetch(`${t.gatewayUrl}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key.secret}`, "content-type": "application/json", "x-request-id": requestId },
      body: JSON.stringify(body),
    });
  }

  it("3e9 input tokens (past an integer) are written, and so is every row after them", async () => {
    const huge = fakeModel("gpt-x", { inputTokens: 3_000_000_000, outputTokens: 3_000_000_000 });
    expect((await postAs("/v1/responses", "req-huge", { model: huge, input: "Hi" })).status).toBe(200);
    const stream = await postAs("/v1/messages", "req-huge-stream", { model: fakeModel("claude-x", { inputTokens: 3_000_000_000 }), max_tokens: 5, stream: true, messages: [{ role: "user", content: "Hi" }] });
    await stream.text();
    expect((await postAs("/v1/responses", "req-after-huge", { model: fakeModel("gpt-x"), input: "Hi" })).status).toBe(200);
    expect(await rowFor("req-huge")).toMatchObject({ status: 200, input_tokens: 3_000_000_000, output_tokens: 3_000_000_000 });
    expect(await rowFor("req-huge-stream")).toMatchObject({ status: 200, input_tokens: 3_000_000_000, tokens_estimated: false });
    expect(await rowFor("req-after-huge")).toMatchObject({ status: 200, input_tokens: 11, output_tokens: 7 });
    expect(t.app.gateway!.requestLog.buffered).toBe(0);
    // The usage API sums them without overflowing.
    const usage = await g.admin("GET", "/v1/gateway/usage?groupBy=key");
    const mine = (usage.body as { items: { subject: string; inputTokens: number; outputTokens: number; totalTokens: number }[] }).items.find((r) => r.subject === key.id);
    expect(mine).toMatchObject({ inputTokens: 6_000_000_011, outputTokens: 3_000_000_000 + 7 + 7, totalTokens: 9_000_000_025 });
  });

  it("a figure past a trillion tokens is counted as a trillion", async () => {
    expect((await postAs("/v1/embeddings", "req-absurd", { model: fakeModel("text-embedding-x", { inputTokens: Number.MAX_SAFE_INTEGER }), input: "Hi" })).status).toBe(200);
    expect(await rowFor("req-absurd")).toMatchObject({ status: 200, input_tokens: MAX_REPORTED_TOKENS });
  });

  it("usage figures that are not whole non-negative numbers count as 0, fractions are cut, huge ones capped", () => {
    expect(usageFrom({ input_tokens: 1e300, output_tokens: 12.9 })).toEqual({ inputTokens: MAX_REPORTED_TOKENS, outputTokens: 12 });
    expect(usageFrom({ input_tokens: -5, output_tokens: "7" })).toEqual({ inputTokens: 0, outputTokens: 0 });
    expect(usageFrom({ input_tokens: null, output_tokens: { n: 1 }, cache_read_input_tokens: 4 })).toEqual({ inputTokens: 4, outputTokens: 0, cachedInputTokens: 4 });
    expect(usageFrom({ input_tokens: 9e11, cache_creation_input_tokens: 9e11, cache_read_input_tokens: 9e11 })).toEqual({
      inputTokens: MAX_REPORTED_TOKENS,
      outputTokens: 0,
      cachedInputTokens: 9e11,
    });
    expect(usageFrom({ prompt_tokens: 2 ** 70 })).toEqual({ inputTokens: MAX_REPORTED_TOKENS, outputTokens: 0 });
    const meter = new StreamUsage();
    meter.observe(new SseEvent(Buffer.from(`event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":1e308}}}\n\n`)));
    meter.observe(new SseEvent(Buffer.from(`event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":-1e308}}\n\n`)));
    expect(meter.usage).toEqual({ inputTokens: MAX_REPORTED_TOKENS, outputTokens: 0 });
  });
});

describe("a row the database refuses", () => {
  function entry(requestId: string, workspaceId: string | null = null): RequestLogEntry {
    return {
      requestId,
      time: new Date(),
      workspaceId,
      keyId: null,
      userId: null,
      groupIds: [],
      endpoint: "messages",
      model: "m",
      provider: "p",
      status: 200,
      errorType: null,
      latencyMs: 1,
      ttfbMs: 1,
      inputTokens: 1,
      outputTokens: 1,
      tokensEstimated: false,
      guardrailVerdict: null,
    };
  }

  function capture(): { logger: Logger; lines: { level: number; msg: string }[] } {
    const lines: { level: number; msg: string }[] = [];
    const logger = pino({ level: "warn" }, { write: (line: string) => void lines.push(JSON.parse(line) as { level: number; msg: string }) });
    return { logger, lines };
  }

  async function written(prefix: string): Promise<string[]> {
    const rows = await t.app.orm.em.fork().execute<{ request_id: string }[]>(
      "select request_id from gateway_request_log where request_id like ? order by request_id",
      [`${prefix}%`],
    );
    return rows.map((r) => r.request_id);
  }

  it("is logged and dropped alone; the rows around it are written, in one flush", async () => {
    const { logger, lines } = capture();
    // The timer is an hour away: only flush() writes here.
    const log = new RequestLog({ databaseUrl: t.database.url, deadlines: t.config.databaseDeadlines, logger, retentionDays: 30, flushIntervalMs: 3_600_000, batchSize: 10 });
    try {
      const prefix = `bisect-${randomUUID()}-`;
      // Rows of workspaces that do not parse as UUIDs: the whole batch's insert fails on them (SQLSTATE 22P02).
      const bad = new Set([3, 4, 17]);
      for (let i = 0; i < 25; i++) log.record(entry(`${prefix}${String(i).padStart(2, "0")}`, bad.has(i) ? "not-a-uuid" : null));
      await log.flush();
      expect(log.buffered).toBe(0);
      const expected = Array.from({ length: 25 }, (_, i) => i).filter((i) => !bad.has(i)).map((i) => `${prefix}${String(i).padStart(2, "0")}`);
      expect(await written(prefix)).toEqual(expected);
      expect(lines.filter((l) => l.msg === "request log row refused by the database; dropped")).toHaveLength(3);
      // Nothing is left to retry: a second flush writes nothing and logs nothing.
      await log.flush();
      expect(await written(prefix)).toEqual(expected);
      expect(lines).toHaveLength(3);
    } finally {
      await log.close();
    }
  });

  it("stores each row's time to the millisecond", async () => {
    const log = new RequestLog({ databaseUrl: t.database.url, deadlines: t.config.databaseDeadlines, logger: createLogger("silent"), retentionDays: 30, flushIntervalMs: 3_600_000 });
    const prefix = `time-${randomUUID()}-`;
    const times = [new Date("2026-11-28T03:50:00.123Z"), new Date("1999-12-31T23:59:59.999Z"), new Date("2026-03-29T01:30:00.001Z")];
    try {
      times.forEach((time, i) => log.record({ ...entry(`${prefix}${i}`), time }));
      await log.flush();
      const rows = await t.app.orm.em.fork().execute<{ request_id: string; iso: string }[]>(
        `select request_id, to_char(time at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as iso from gateway_request_log where request_id like ? order by request_id`,
        [`${prefix}%`],
      );
      expect(rows.map((r) => r.iso)).toEqual(times.map((time) => time.toISOString()));
    } finally {
      await log.close();
    }
  });

  it("retention deletes a backlog of many batches, and only rows older than the retention", async () => {
    const log = new RequestLog({ databaseUrl: t.database.url, deadlines: t.config.databaseDeadlines, logger: createLogger("silent"), retentionDays: 30, flushIntervalMs: 3_600_000 });
    const prefix = `retention-${randomUUID()}-`;
    const insert = (count: number, age: string) =>
      t.app.orm.em.fork().execute(
        `insert into gateway_request_log (request_id, time, endpoint, status, latency_ms)
         select ? || g, now() - ?::interval, 'messages', 200, 1 from generate_series(1, ?) g`,
        [prefix, age, count],
      );
    const left = async (age: "old" | "new") =>
      (await t.app.orm.em.fork().execute<{ n: number }[]>(
        `select count(*)::int as n from gateway_request_log where request_id like ? and time ${age === "old" ? "<" : ">="} now() - interval '30 days'`,
        [`${prefix}%`],
      ))[0]!.n;
    try {
      // More than two batches of 5,000 past the retention, then a few within it, then a few more past it.
      await insert(12_001, "31 days");
      await insert(3, "29 days");
      await insert(7, "45 days");
      expect([await left("old"), await left("new")]).toEqual([12_008, 3]);
      await log.expire();
      expect([await left("old"), await left("new")]).toEqual([0, 3]);
    } finally {
      await log.close();
    }
  });

  it("a database that is away keeps the rows (up to maxBuffered, the oldest dropped) for a later write", async () => {
    const { logger, lines } = capture();
    // Nothing listens on port 1: every connection is refused at once.
    const log = new RequestLog({ databaseUrl: "postgres://postgres@127.0.0.1:1/none", deadlines: t.config.databaseDeadlines, logger, retentionDays: 30, flushIntervalMs: 3_600_000, maxBuffered: 5 });
    try {
      for (let i = 0; i < 8; i++) log.record(entry(`away-${i}`));
      expect(log.buffered).toBe(5);
      await log.flush();
      expect(log.buffered).toBe(5);
      expect(lines.map((l) => l.msg)).toEqual(["request log write failed; will retry"]);
    } finally {
      await log.close().catch(() => undefined);
    }
  });
});

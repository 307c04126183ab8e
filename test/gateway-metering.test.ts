import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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

async function rowFor(requestId: string): Promise<Row> {
  await t.app.gateway!.requestLog.flush();
  const rows = await t.app.orm.em.fork().execute<Row[]>("select * from gateway_request_log where request_id = ?", [requestId]);
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
  it("records a plain call with the provider's usage, and does not return the request ID", async () => {
    const res = await post("/v1/messages", "req-plain", { model: fakeModel("claude-x", { inputTokens: 40, outputTokens: 9 }), max_tokens: 50, messages: [{ role: "user", content: "Hi" }] });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-request-id")).toBeNull();
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
    const rows = await t.app.orm.em.fork().execute<Row[]>("select * from gateway_request_log where request_id = ?", [requestId]);
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
    const [expected] = await t.app.orm.em.fork().execute<{ n: number; input: number; output: number; est: number }[]>(
      "select count(*)::int as n, sum(input_tokens)::int as input, sum(output_tokens)::int as output, (count(*) filter (where tokens_estimated))::int as est from gateway_request_log where key_id = ?",
      [keyId.items[0]!.id],
    );
    expect(mine).toEqual({
      subject: keyId.items[0]!.id,
      requests: expected!.n,
      inputTokens: expected!.input,
      outputTokens: expected!.output,
      totalTokens: expected!.input + expected!.output,
      estimatedRequests: expected!.est,
    });
    const byModel = await admin("GET", "/v1/gateway/usage?groupBy=model");
    expect((byModel.body as { groupBy: string; items: { subject: string }[] }).groupBy).toBe("model");
    expect((byModel.body as { items: { subject: string }[] }).items.map((r) => r.subject)).toContain(fakeModel("claude-x", { inputTokens: 40, outputTokens: 9 }));
    const past = await admin("GET", "/v1/gateway/usage?startTime=2020-01-01T00:00:00Z&endTime=2020-01-02T00:00:00Z");
    expect(past.body).toEqual({ startTime: "2020-01-01T00:00:00.000Z", endTime: "2020-01-02T00:00:00.000Z", groupBy: "key", items: [] });
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

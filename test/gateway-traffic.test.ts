import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";
import { fakeModel } from "./support/fake-providers.ts";
import { setUpGateway, type GatewayFixture } from "./support/gateway-setup.ts";
import { errorBody } from "./support/http.ts";
import { setUpWaitMs, until } from "./support/wait.ts";
import { evaluated } from "./support/evaluation.ts";
import { addWorkspace } from "./support/workspace.ts";

/**
 * Gateway traffic as rows of an inference pipeline, end to end: the official SDKs call the gateway,
 * fake providers answer on loopback, the rows go through the real row store, and are read back
 * with GET /v1/inference-pipelines/{id}/rows/{inferenceId} and POST …/rows, as any client reads
 * rows sent by data-stream.
 */

let t: TestApp;
let g: GatewayFixture;
/** Pipelines of an llm-base project: the key's own, the workspace's default, one to delete. */
const pipelines = { own: "", fallback: "", doomed: "", tabular: "" };
const keys = { bound: { id: "", secret: "" }, unbound: { id: "", secret: "" }, doomed: { id: "", secret: "" } };
let userId = "";

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

async function created(path: string, body: unknown, status = 201): Promise<Record<string, string>> {
  const res = await g.admin("POST", path, { body });
  if (res.status !== status) throw new Error(`${path}: ${res.status} ${res.text}`);
  return res.body as Record<string, string>;
}

async function project(name: string, taskType: string): Promise<string> {
  return (await created("/v1/projects", { name, taskType })).id!;
}

async function pipeline(projectId: string, name: string): Promise<string> {
  return (await created(`/v1/projects/${projectId}/inference-pipelines`, { name, description: name }, 200)).id!;
}

beforeAll(async () => {
  t = await startTestApp();
  g = await setUpGateway(t);
  const llm = await project("gateway traffic", "llm-base");
  pipelines.own = await pipeline(llm, "production");
  pipelines.fallback = await pipeline(llm, "workspace default");
  pipelines.doomed = await pipeline(llm, "to delete");
  pipelines.tabular = await pipeline(await project("tabular", "tabular-classification"), "tabular");
  userId = (await created("/v1/gateway/users", { name: "Ada" })).id!;
  const key = async (body: Record<string, unknown>) => {
    const made = await created("/v1/gateway/keys", body);
    return { id: made.id!, secret: made.secret! };
  };
  keys.bound = await key({ name: "bound", userId, inferencePipelineId: pipelines.own });
  keys.unbound = await key({ name: "unbound" });
  keys.doomed = await key({ name: "doomed", inferencePipelineId: pipelines.doomed });
  // Requests of this block rule are refused with 403.
  await created("/v1/gateway/access-rules", { effect: "block", subject: "workspace", models: ["forbidden-*"] });
  await t.app.gateway!.watcher.reload();
});
afterAll(async () => {
  await g?.close();
  await t?.stop();
});

const rows = () => t.app.gateway!.pipelineRows;

/** The pipeline the gateway's snapshot writes a key's traffic to. */
function effectivePipeline(keyId: string): string | null | undefined {
  return [...t.app.gateway!.watcher.snapshot.keysByHash.values()].find((key) => key.id === keyId)?.inferencePipelineId;
}

/** The stored row, read back through the REST API once the gateway has written what it holds. */
async function storedRow(pipelineId: string, inferenceId: string): Promise<Record<string, unknown>> {
  await rows().flush();
  const res = await g.admin("GET", `/v1/inference-pipelines/${pipelineId}/rows/${encodeURIComponent(inferenceId)}`);
  expect(res.status, res.text).toBe(200);
  const body = res.body as { row: Record<string, unknown>; success: boolean };
  expect(body.success).toBe(true);
  return body.row;
}

async function noRow(pipelineId: string, inferenceId: string): Promise<void> {
  await rows().flush();
  const res = await g.admin("GET", `/v1/inference-pipelines/${pipelineId}/rows/${encodeURIComponent(inferenceId)}`);
  expect(res.status).toBe(404);
}

function anthropic(secret: string, headers: Record<string, string> = {}) {
  return new Anthropic({ baseURL: t.gatewayUrl, apiKey: secret, maxRetries: 0, defaultHeaders: headers });
}

function openai(secret: string, headers: Record<string, string> = {}) {
  return new OpenAI({ baseURL: `${t.gatewayUrl}/v1`, apiKey: secret, maxRetries: 0, defaultHeaders: headers });
}

/** The columns every row has, with the values that depend on the clock. */
function timing(started: number, ended: number) {
  return {
    timestamp: expect.toSatisfy((s: number) => s >= Math.floor(started / 1000) && s <= ended / 1000),
    latency: expect.toSatisfy((ms: number) => Number.isInteger(ms) && ms >= 0 && ms <= ended - started),
  };
}

describe("requests through a key bound to a pipeline are its rows", () => {
  it("anthropic, not streamed: every column, X-Request-ID as the inference ID and X-Session-ID as the session", async () => {
    const started = Date.now();
    const model = fakeModel("claude-x", { text: "Bonjour !", inputTokens: 21, outputTokens: 5 });
    const message = await anthropic(keys.bound.secret, { "x-request-id": "anthropic-plain", "x-session-id": "session-1" }).messages.create({
      model,
      max_tokens: 64,
      system: "Answer in French.",
      messages: [
        { role: "user", content: "Hello" },
        { role: "assistant", content: "Salut" },
        { role: "user", content: [{ type: "text", text: "How are you?" }, { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }] },
      ],
    });
    expect(message.content[0]).toMatchObject({ type: "text", text: "Bonjour !" });
    const row = await storedRow(pipelines.own, "anthropic-plain");
    expect(row).toMatchObject({
      inferenceId: "anthropic-plain",
      ...timing(started, Date.now()),
      input: "How are you?\n[image]",
      messages: [
        { role: "user", content: "Hello" },
        { role: "assistant", content: "Salut" },
        { role: "user", content: "How are you?\n[image]" },
      ],
      system: "Answer in French.",
      instructions: null,
      output: "Bonjour !",
      model,
      provider: "anthropic",
      endpoint: "messages",
      status: 200,
      errorType: null,
      timeToFirstToken: expect.any(Number),
      inputTokens: 21,
      outputTokens: 5,
      tokens: 26,
      guardrails: null,
      userId,
      sessionId: "session-1",
      keyId: keys.bound.id,
    });
    // Mapped as data-stream maps them: the canonical columns that tests read.
    expect(row).toMatchObject({
      openlayer_inference_id: "anthropic-plain",
      openlayer_output: "Bonjour !",
      openlayer_num_of_tokens: 26,
      openlayer_latency: row.latency,
      openlayer_timestamp: row.timestamp,
      openlayer_session_id: "session-1",
      openlayer_user_id: userId,
    });
  });

  it("anthropic, streamed: the output is assembled from the events", async () => {
    const model = fakeModel("claude-x", { text: "Once upon a time, a stream.", events: 5, inputTokens: 9, outputTokens: 6 });
    const stream = anthropic(keys.bound.secret, { "x-request-id": "anthropic-stream" }).messages.stream({
      model,
      max_tokens: 64,
      messages: [{ role: "user", content: "Tell me a story" }],
    });
    expect((await stream.finalMessage()).content[0]).toMatchObject({ text: "Once upon a time, a stream." });
    expect(await storedRow(pipelines.own, "anthropic-stream")).toMatchObject({
      input: "Tell me a story",
      messages: [{ role: "user", content: "Tell me a story" }],
      system: null,
      output: "Once upon a time, a stream.",
      status: 200,
      inputTokens: 9,
      outputTokens: 6,
      tokens: 15,
      timeToFirstToken: expect.any(Number),
      sessionId: null,
    });
  });

  it("openai responses, not streamed and streamed, with instructions", async () => {
    const client = openai(keys.bound.secret);
    const model = fakeModel("gpt-x", { text: "Forty-two.", inputTokens: 13, outputTokens: 3 });
    const plain = await client.responses.create({ model, input: "The answer?", instructions: "Be terse." }, { headers: { "x-request-id": "openai-plain" } });
    expect(plain.output_text).toBe("Forty-two.");
    const stream = await client.responses.create(
      { model, input: [{ role: "user", content: "The answer, slowly?" }], instructions: "Be terse.", stream: true },
      { headers: { "x-request-id": "openai-stream", "x-session-id": "session-2" } },
    );
    for await (const event of stream) expect(event.type).not.toBe("error");
    const common = { system: null, instructions: "Be terse.", output: "Forty-two.", model, provider: "openai", endpoint: "responses", status: 200, inputTokens: 13, outputTokens: 3, tokens: 16 };
    expect(await storedRow(pipelines.own, "openai-plain")).toMatchObject({
      ...common,
      input: "The answer?",
      messages: [{ role: "user", content: "The answer?" }],
      sessionId: null,
    });
    expect(await storedRow(pipelines.own, "openai-stream")).toMatchObject({
      ...common,
      input: "The answer, slowly?",
      messages: [{ role: "user", content: "The answer, slowly?" }],
      sessionId: "session-2",
    });
  });

  it("chat completions, not streamed and streamed, with a system message and a tool call in the history", async () => {
    const client = openai(keys.bound.secret);
    const model = fakeModel("gpt-x", { text: "Forty-two.", inputTokens: 13, outputTokens: 3 });
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
      { role: "system", content: "Be terse." },
      { role: "user", content: "Look it up." },
      { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "lookup", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "call_1", content: "42" },
      { role: "user", content: "The answer?" },
    ];
    const plain = await client.chat.completions.create({ model, messages }, { headers: { "x-request-id": "chat-plain" } });
    expect(plain.choices[0]!.message.content).toBe("Forty-two.");
    const stream = await client.chat.completions.create({ model, messages, stream: true, stream_options: { include_usage: true } }, { headers: { "x-request-id": "chat-stream" } });
    for await (const chunk of stream) void chunk;
    const expected = {
      system: "Be terse.",
      instructions: null,
      input: "The answer?",
      messages: [
        { role: "user", content: "Look it up." },
        { role: "assistant", content: "[function_call: lookup]" },
        { role: "tool", content: "42" },
        { role: "user", content: "The answer?" },
      ],
      output: "Forty-two.",
      model,
      provider: "openai",
      endpoint: "chat",
      status: 200,
      inputTokens: 13,
      outputTokens: 3,
      tokens: 16,
    };
    expect(await storedRow(pipelines.own, "chat-plain")).toMatchObject(expected);
    expect(await storedRow(pipelines.own, "chat-stream")).toMatchObject(expected);
  });

  it("a refused request (a model the workspace blocks) is a row with its status and error type", async () => {
    const client = anthropic(keys.bound.secret, { "x-request-id": "refused" });
    await expect(client.messages.create({ model: "forbidden-model", max_tokens: 5, messages: [{ role: "user", content: "Hi" }] })).rejects.toMatchObject({ status: 403 });
    expect(await storedRow(pipelines.own, "refused")).toMatchObject({
      input: "Hi",
      output: null,
      model: "forbidden-model",
      provider: null,
      status: 403,
      errorType: "permission_error",
      timeToFirstToken: null,
      inputTokens: 0,
      outputTokens: 0,
      tokens: 0,
    });
  });

  it("a failed request (provider 500, answered 502) is a row with its status and error type", async () => {
    const client = openai(keys.bound.secret, { "x-request-id": "failed" });
    await expect(client.responses.create({ model: fakeModel("gpt-x", { status: 500, message: "boom" }), input: "Hi" })).rejects.toMatchObject({ status: 502 });
    expect(await storedRow(pipelines.own, "failed")).toMatchObject({ input: "Hi", output: null, provider: "openai", status: 502, errorType: "api_error", tokens: 0 });
  });

  it("a large request (read by a worker) keeps its text, cut at 64 Ki characters with a marker", async () => {
    const long = "word ".repeat(30_000);
    await anthropic(keys.bound.secret, { "x-request-id": "large" }).messages.create({ model: "claude-x", max_tokens: 5, messages: [{ role: "user", content: long }] });
    const kept = long.slice(0, 65_536) + " [cut by Warden: 65536 of 150000 characters kept]";
    expect(await storedRow(pipelines.own, "large")).toMatchObject({ input: kept, messages: [{ role: "user", content: kept }], output: "Hello from anthropic" });
  });

  it("a 401 makes no row: no key is known", async () => {
    const written = rows().written;
    const res = await fetch(`${t.gatewayUrl}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": "sk-wg-not-a-key", "content-type": "application/json", "x-request-id": "unauthorized" },
      body: JSON.stringify({ model: "claude-x", max_tokens: 5, messages: [{ role: "user", content: "Hi" }] }),
    });
    expect(res.status).toBe(401);
    await res.text();
    await noRow(pipelines.own, "unauthorized");
    expect(rows().written).toBe(written);
  });

  it("a key without a pipeline (and no workspace default) makes no row", async () => {
    const written = rows().written;
    await anthropic(keys.unbound.secret, { "x-request-id": "unbound" }).messages.create({ model: "claude-x", max_tokens: 5, messages: [{ role: "user", content: "Hi" }] });
    await noRow(pipelines.own, "unbound");
    expect(rows().written).toBe(written);
  });
});

describe("the workspace's default pipeline", () => {
  it("takes the rows of keys that name none, with a generated inference ID when there is no X-Request-ID, until it is cleared", async () => {
    const set = await g.admin("PATCH", "/v1/gateway/workspace-settings", { body: { inferencePipelineId: pipelines.fallback } });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ inferencePipelineId: pipelines.fallback, judgeModel: null, judgeKeySet: false, dateUpdated: expect.any(String) });
    expect((await g.admin("GET", "/v1/gateway/workspace-settings")).body).toEqual(set.body);
    // The change reaches the gateway by itself, through LISTEN/NOTIFY.
    await until(async () => effectivePipeline(keys.unbound.id) === pipelines.fallback, "the gateway to see the workspace's default", setUpWaitMs);
    expect(effectivePipeline(keys.bound.id)).toBe(pipelines.own);

    await anthropic(keys.unbound.secret).messages.create({ model: "claude-x", max_tokens: 5, messages: [{ role: "user", content: "Default?" }] });
    // A key that names its own pipeline keeps it.
    await anthropic(keys.bound.secret, { "x-request-id": "still-own" }).messages.create({ model: "claude-x", max_tokens: 5, messages: [{ role: "user", content: "Own?" }] });
    await rows().flush();
    const listed = await g.admin("POST", `/v1/inference-pipelines/${pipelines.fallback}/rows`, { body: {} });
    expect(listed.status, listed.text).toBe(200);
    const items = (listed.body as { items: Record<string, unknown>[] }).items;
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ input: "Default?", keyId: keys.unbound.id, userId: null, inferenceId: expect.stringMatching(uuid) });
    expect(await storedRow(pipelines.own, "still-own")).toMatchObject({ input: "Own?" });

    const cleared = await g.admin("PATCH", "/v1/gateway/workspace-settings", { body: { inferencePipelineId: null } });
    expect(cleared.body).toEqual({ inferencePipelineId: null, judgeModel: null, judgeKeySet: false, dateUpdated: expect.any(String) });
    await until(async () => effectivePipeline(keys.unbound.id) === null, "the gateway to see the default cleared", setUpWaitMs);
    await anthropic(keys.unbound.secret, { "x-request-id": "after-clear" }).messages.create({ model: "claude-x", max_tokens: 5, messages: [{ role: "user", content: "Hi" }] });
    await noRow(pipelines.fallback, "after-clear");
  });
});

describe("binding keys and workspaces to pipelines", () => {
  it("shows a key's pipeline, changes it, and clears it with null", async () => {
    const made = await created("/v1/gateway/keys", { name: "to bind" });
    expect(made.inferencePipelineId).toBeNull();
    const bound = await g.admin("PATCH", `/v1/gateway/keys/${made.id}`, { body: { inferencePipelineId: pipelines.own } });
    expect(bound.status).toBe(200);
    expect(bound.body).toMatchObject({ id: made.id, name: "to bind", inferencePipelineId: pipelines.own });
    const listed = (await g.admin("GET", "/v1/gateway/keys")).body as { items: Record<string, unknown>[] };
    expect(listed.items.find((k) => k.id === made.id)).toMatchObject({ inferencePipelineId: pipelines.own });
    const renamed = await g.admin("PATCH", `/v1/gateway/keys/${made.id}`, { body: { name: "renamed" } });
    expect(renamed.body).toMatchObject({ name: "renamed", inferencePipelineId: pipelines.own });
    const cleared = await g.admin("PATCH", `/v1/gateway/keys/${made.id}`, { body: { inferencePipelineId: null } });
    expect(cleared.body).toMatchObject({ inferencePipelineId: null });
  });

  it("refuses a pipeline that does not exist, is in another workspace, is not a UUID, or is not of an llm-base project", async () => {
    const other = await addWorkspace(t.app);
    const theirs = await fetch(`${t.baseUrl}/v1/projects`, {
      method: "POST",
      headers: { authorization: `Bearer ${other.key}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "theirs", taskType: "llm-base" }),
    }).then((r) => r.json() as Promise<{ id: string }>);
    const theirPipeline = await fetch(`${t.baseUrl}/v1/projects/${theirs.id}/inference-pipelines`, {
      method: "POST",
      headers: { authorization: `Bearer ${other.key}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "theirs", description: "theirs" }),
    }).then((r) => r.json() as Promise<{ id: string }>);

    const missing = errorBody("inferencePipelineId names no inference pipeline of this workspace", "not_found");
    const notLlm = errorBody("inferencePipelineId must name a pipeline of an llm-base project: gateway requests are written as LLM rows", "invalid_argument");
    const notUuid = errorBody("inferencePipelineId must be a UUID", "invalid_argument");
    const cases: [unknown, number, unknown][] = [
      ["00000000-0000-4000-8000-000000000000", 404, missing],
      [theirPipeline.id, 404, missing],
      ["nope", 400, notUuid],
      [pipelines.tabular, 400, notLlm],
    ];
    for (const [inferencePipelineId, status, body] of cases) {
      const create = await g.admin("POST", "/v1/gateway/keys", { body: { name: "x", inferencePipelineId } });
      expect([create.status, create.body]).toEqual([status, body]);
      const update = await g.admin("PATCH", `/v1/gateway/keys/${keys.unbound.id}`, { body: { inferencePipelineId } });
      expect([update.status, update.body]).toEqual([status, body]);
      const workspace = await g.admin("PATCH", "/v1/gateway/workspace-settings", { body: { inferencePipelineId } });
      expect([workspace.status, workspace.body]).toEqual([status, body]);
    }
    // Nothing was bound by the refusals.
    const listed = (await g.admin("GET", "/v1/gateway/keys")).body as { items: Record<string, unknown>[] };
    expect(listed.items.find((k) => k.id === keys.unbound.id)).toMatchObject({ inferencePipelineId: null });
    expect(listed.items.filter((k) => k.name === "x")).toEqual([]);
    expect((await g.admin("GET", "/v1/gateway/workspace-settings")).body).toMatchObject({ inferencePipelineId: null });
  });

  it("a pipeline deleted after the binding: the gateway answers as ever, and its rows are dropped and counted", async () => {
    const deleted = await g.admin("DELETE", `/v1/inference-pipelines/${pipelines.doomed}`);
    expect(deleted.status).toBe(200);
    const dropped = rows().dropped;
    const message = await anthropic(keys.doomed.secret, { "x-request-id": "orphan" }).messages.create({ model: "claude-x", max_tokens: 5, messages: [{ role: "user", content: "Hi" }] });
    expect(message.type).toBe("message");
    await rows().flush();
    expect(rows().dropped).toBe(dropped + 1);
    expect(rows().buffered).toBe(0);
  });
});

describe("guardrail verdicts", () => {
  it("a request an input guardrail blocks is a row with its status, and the verdict", async () => {
    const guardrail = await created("/v1/gateway/guardrails", { kind: "pii", stage: "input" });
    try {
      await t.app.gateway!.watcher.reload();
      await t.app.gateway!.detectors.ready;
      const client = anthropic(keys.bound.secret, { "x-request-id": "blocked" });
      await expect(client.messages.create({ model: "claude-x", max_tokens: 5, messages: [{ role: "user", content: "My card is 4111 1111 1111 1111" }] })).rejects.toMatchObject({ status: 422 });
      await client.messages.create({ model: "claude-x", max_tokens: 5, messages: [{ role: "user", content: "Nothing to see" }] }, { headers: { "x-request-id": "passed" } });
      expect(await storedRow(pipelines.own, "blocked")).toMatchObject({
        input: "My card is 4111 1111 1111 1111",
        output: null,
        provider: null,
        status: 422,
        errorType: "invalid_request_error",
        guardrails: ["pii:blocked:input"],
        tokens: 0,
      });
      expect(await storedRow(pipelines.own, "passed")).toMatchObject({ status: 200, guardrails: ["pii:pass"], output: "Hello from anthropic" });
    } finally {
      await g.admin("DELETE", `/v1/gateway/guardrails/${guardrail.id}`);
      await t.app.gateway!.watcher.reload();
    }
  });
});

describe("gateway traffic is evaluated as any pipeline's rows", () => {
  it("monitoring tests measure a bound key's requests", async () => {
    const llm = (await created("/v1/projects", { name: "evaluated traffic", taskType: "llm-base" })).id!;
    const target = await pipeline(llm, "evaluated");
    const key = await created("/v1/gateway/keys", { name: "evaluated", inferencePipelineId: target });
    await t.app.gateway!.watcher.reload();
    // Outputs of 2, 4 and 6 characters (mean 4), and 3 + 2 tokens per request (total 15).
    for (const text of ["ab", "abcd", "abcdef"]) {
      const model = fakeModel("claude-x", { text, inputTokens: 3, outputTokens: 2 });
      await anthropic(key.secret!).messages.create({ model, max_tokens: 8, messages: [{ role: "user", content: "Say it" }] });
    }
    await rows().flush();
    // One window of ten years, so that the three requests cannot straddle two windows.
    const windowSeconds = 10 * 365 * 86_400;
    const test = async (subtype: string, threshold: Record<string, unknown>) => {
      const made = await created(`/v1/projects/${llm}/tests`, {
        name: subtype, description: null, type: "integrity", subtype, thresholds: [threshold], usesProductionData: true, evaluationWindow: windowSeconds,
      });
      const now = Math.floor(Date.now() / 1000);
      const results = await evaluated(g.admin, made.id!, { startTimestamp: now - 1, endTimestamp: now });
      return results.map((r) => [r.status, r.statusMessage]);
    };
    expect(await test("rowCount", { operator: "is", value: 3 })).toEqual([["passing", "rowCount = 3 (threshold is 3: holds)"]]);
    expect(await test("characterLength", { operator: "<=", value: 4 })).toEqual([["passing", "characterLength = 4 (threshold <= 4: holds)"]]);
    expect(await test("metricThreshold", { insightName: "metrics", measurement: "totalTokens", operator: "<", value: 15 })).toEqual([
      ["failing", "totalTokens = 15 (threshold < 15: does not hold)"],
    ]);
  });
});

/**
 * The exact requests of the official Openlayer SDKs, replayed against Warden: headers, query
 * encoding, bodies (pretty-printed by the older TypeScript client), the uploads to presigned URLs
 * (no bearer token: the URL itself authorises them) and the batch loads. Read from the public
 * source of openlayer-ai/openlayer-ts (src/lib/tracing/tracer.ts, src/lib/core/openai-monitor.ts,
 * src/resources/inference-pipelines/*) and openlayer-ai/openlayer-python (lib/tracing/tracer.py,
 * lib/data/_upload.py, lib/data/batch_inferences.py, resources/inference_pipelines/rows.py).
 */
import { tableFromArrays, tableToIPC } from "apache-arrow";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";
import { descriptorsOn } from "./support/descriptors.ts";
import { pythonPost } from "./support/python-upload.ts";
import { until } from "./support/wait.ts";
import { addWorkspace } from "./support/workspace.ts";

let t: TestApp;
let pipelineId: string;

/** What both SDK generations send on every call (X-Stainless-* as on Linux x64). */
function tsHeaders(generation: "old" | "new", withBody: boolean): Record<string, string> {
  const headers: Record<string, string> = {
    accept: "application/json",
    "user-agent": "Openlayer/JS 0.19.2",
    authorization: `Bearer ${t.adminKey}`,
    "x-stainless-lang": "js",
    "x-stainless-package-version": "0.19.2",
    "x-stainless-os": "Linux",
    "x-stainless-arch": "x64",
    "x-stainless-runtime": "node",
    "x-stainless-runtime-version": "v20.11.0",
    "x-stainless-retry-count": "0",
    // The old generation sends milliseconds and a content type on every call; the new, seconds and only with a body.
    "x-stainless-timeout": generation === "old" ? "60000" : "60",
  };
  if (generation === "old" || withBody) headers["content-type"] = "application/json";
  return headers;
}

function pyHeaders(): Record<string, string> {
  return {
    accept: "application/json",
    "content-type": "application/json",
    "user-agent": "Openlayer/Python 0.2.0a66",
    authorization: `Bearer ${t.adminKey}`,
    "x-stainless-lang": "python",
    "x-stainless-package-version": "0.2.0a66",
    "x-stainless-os": "Linux",
    "x-stainless-arch": "x64",
    "x-stainless-runtime": "CPython",
    "x-stainless-runtime-version": "3.11.9",
    "x-stainless-async": "false",
    "x-stainless-retry-count": "0",
    "x-stainless-read-timeout": "60.0",
  };
}

async function send(method: string, path: string, headers: Record<string, string>, body?: string | Uint8Array): Promise<{ status: number; json: unknown; text: string }> {
  const response = await fetch(t.baseUrl + path, { method, headers, body });
  const text = await response.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: response.status, json, text };
}

async function row(inferenceId: string): Promise<Record<string, unknown>> {
  // Python's rows.retrieve: a GET with a JSON content type and no body.
  const got = await send("GET", `/v1/inference-pipelines/${pipelineId}/rows/${encodeURIComponent(inferenceId)}`, pyHeaders());
  expect(got.status).toBe(200);
  expect((got.json as { success: boolean }).success).toBe(true);
  return (got.json as { row: Record<string, unknown> }).row;
}

beforeAll(async () => {
  t = await startTestApp();
  const headers = { authorization: `Bearer ${t.adminKey}`, "content-type": "application/json" };
  const project = await fetch(`${t.baseUrl}/v1/projects`, { method: "POST", headers, body: JSON.stringify({ name: "sdk", taskType: "llm-base" }) });
  const projectId = ((await project.json()) as { id: string }).id;
  const pipeline = await fetch(`${t.baseUrl}/v1/projects/${projectId}/inference-pipelines`, {
    method: "POST",
    headers,
    body: JSON.stringify({ name: "production", description: null }),
  });
  pipelineId = ((await pipeline.json()) as { id: string }).id;
});
afterAll(() => t?.stop());

describe("TypeScript SDK", () => {
  const tracerRow = (inferenceId: string) => ({
    inferenceTimestamp: Math.floor(Date.now() / 1000),
    inferenceId,
    output: "Paris.",
    groundTruth: null,
    latency: 812,
    cost: 0.00021,
    tokens: 42,
    steps: [{
      name: "answer", id: inferenceId, type: "user_call", inputs: { question: "Capital of France?" }, output: "Paris.",
      groundTruth: null, metadata: {}, latency: 812, startTime: 1718031233410, endTime: 1718031234222,
      steps: [{
        name: "OpenAI Chat Completion", id: "b2", type: "chat_completion", inputs: { prompt: [{ role: "user", content: "Capital of France?" }] },
        output: "Paris.", groundTruth: null, metadata: {}, steps: [], latency: 790.41, startTime: 1718031233420, endTime: 1718031234211,
        provider: "OpenAI", promptTokens: 30, completionTokens: 12, tokens: 42, cost: null, model: "gpt-4o-mini-2024-07-18",
        modelParameters: { temperature: 1, top_p: 1, n: 1, stop: null }, rawOutput: "{}",
      }],
    }],
    metadata: {},
    question: "Capital of France?",
    session_id: "sess-1",
    user_id: "user-1",
  });
  const tracerConfig = {
    outputColumnName: "output",
    inputVariableNames: ["question"],
    groundTruthColumnName: "groundTruth",
    latencyColumnName: "latency",
    costColumnName: "cost",
    timestampColumnName: "inferenceTimestamp",
    inferenceIdColumnName: "inferenceId",
    numOfTokenColumnName: "tokens",
    sessionIdColumnName: "session_id",
    userIdColumnName: "user_id",
  };

  it.each(["old", "new"] as const)("the tracer's data-stream (%s client generation) is stored, and read back", async (generation) => {
    const inferenceId = `ts-${generation}-6f1c2d3e`;
    const payload = { config: tracerConfig, rows: [tracerRow(inferenceId)] };
    // The old generation pretty-prints its bodies.
    const body = generation === "old" ? JSON.stringify(payload, null, 2) : JSON.stringify(payload);
    const res = await send("POST", `/v1/inference-pipelines/${pipelineId}/data-stream`, tsHeaders(generation, true), body);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ success: true });
    const stored = await row(inferenceId);
    expect(stored).toEqual({
      openlayer_row_id: expect.any(Number),
      ...payload.rows[0],
      openlayer_inference_id: inferenceId,
      openlayer_timestamp: payload.rows[0]!.inferenceTimestamp,
      openlayer_output: "Paris.",
      openlayer_latency: 812,
      openlayer_cost: 0.00021,
      openlayer_num_of_tokens: 42,
      openlayer_session_id: "sess-1",
      openlayer_user_id: "user-1",
    });
  });

  it("OpenAIMonitor's rows (a timestamp in milliseconds, no id, no cost) are stored, never refused", async () => {
    const config = {
      costColumnName: "cost", inferenceIdColumnName: "id", latencyColumnName: "latency", numOfTokenColumnName: "tokens",
      outputColumnName: "output", timestampColumnName: "timestamp", inputVariableNames: ["message_0", "message_1"],
      prompt: [{ role: "system", content: "Be brief." }, { role: "user", content: "{{ message_1 }}" }],
    };
    const rows = [{ latency: 640, model: "gpt-9-unpriced", output: "4", timestamp: 1718031233410, tokens: 57, message_0: "Be brief.", message_1: "What is 2+2?" }];
    const res = await send("POST", `/v1/inference-pipelines/${pipelineId}/data-stream`, tsHeaders("old", true), JSON.stringify({ config, rows }, null, 2));
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ success: true });
  });

  it("rows.update: a late ground truth, with the generated test's config", async () => {
    const body = {
      row: { ground_truth: "Paris", human_feedback: "good" },
      config: { groundTruthColumnName: "ground_truth", humanFeedbackColumnName: "human_feedback", inferenceIdColumnName: "id", latencyColumnName: "latency", timestampColumnName: "timestamp" },
    };
    const res = await send("PUT", `/v1/inference-pipelines/${pipelineId}/rows?inferenceId=ts-new-6f1c2d3e`, tsHeaders("new", true), JSON.stringify(body));
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ success: true });
    const stored = await row("ts-new-6f1c2d3e");
    expect(stored).toMatchObject({ ground_truth: "Paris", human_feedback: "good", openlayer_ground_truth: "Paris", output: "Paris." });
  });
});

describe("Python SDK", () => {
  it("the tracer's data-stream: float seconds, metadata spread into the row, session and user keys in snake_case", async () => {
    const config = {
      outputColumnName: "output", inputVariableNames: ["question"], latencyColumnName: "latency", costColumnName: "cost",
      timestampColumnName: "inferenceTimestamp", inferenceIdColumnName: "inferenceId", numOfTokenColumnName: "tokens",
      user_id_column_name: "user_id", session_id_column_name: "session_id",
    };
    const rows = [{
      inferenceTimestamp: 1718031233.4102, inferenceId: "py-1", output: "Paris.", latency: 790.41, cost: null, tokens: null,
      steps: [{ name: "chat", type: "chat_completion", startTime: 1718031233.41, endTime: 1718031234.2, metadata: { timeToFirstToken: 120.5 } }],
      has_guardrails: false, user_id: "u-7", session_id: "s-7", question: "Capital of France?",
    }];
    const res = await send("POST", `/v1/inference-pipelines/${pipelineId}/data-stream`, pyHeaders(), JSON.stringify({ config, rows }));
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ success: true });
    expect(await row("py-1")).toEqual({
      openlayer_row_id: expect.any(Number),
      ...rows[0],
      openlayer_inference_id: "py-1",
      openlayer_timestamp: 1718031233.4102,
      openlayer_output: "Paris.",
      openlayer_latency: 790.41,
      openlayer_session_id: "s-7",
      openlayer_user_id: "u-7",
    });
  });

  it("data.stream, as the SDK's generated test sends it (strings in unmapped columns are only data)", async () => {
    const body = { config: { outputColumnName: "output" }, rows: [{ user_query: "bar", output: "bar", tokens: "bar", cost: "bar", timestamp: "bar" }] };
    const res = await send("POST", `/v1/inference-pipelines/${pipelineId}/data-stream`, pyHeaders(), JSON.stringify(body));
    expect(res.status).toBe(200);
    // With tokens mapped, "bar" is refused: a mapped numeric column must hold numbers.
    const mapped = { ...body, config: { outputColumnName: "output", numOfTokenColumnName: "tokens" } };
    const refused = await send("POST", `/v1/inference-pipelines/${pipelineId}/data-stream`, pyHeaders(), JSON.stringify(mapped));
    expect(refused.status).toBe(400);
    expect(refused.json).toEqual({ error: "rows[0].tokens must be a number", message: "rows[0].tokens must be a number", code: "invalid_argument" });
  });

  it("rows.list, with the generated test's query and body", async () => {
    const body = {
      columnFilters: [{ measurement: "openlayer_token_set", operator: "contains_none", value: ["cat"] }],
      excludeRowIdList: [0], notSearchQueryAnd: ["string"], notSearchQueryOr: ["string"], rowIdList: [0], searchQueryAnd: ["string"], searchQueryOr: ["string"],
    };
    const res = await send("POST", `/v1/inference-pipelines/${pipelineId}/rows?asc=true&page=1&perPage=1&sortColumn=sortColumn`, pyHeaders(), JSON.stringify(body));
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ items: [] });
    // With no arguments the SDK sends {}: every row, oldest first with asc=true.
    const all = await send("POST", `/v1/inference-pipelines/${pipelineId}/rows?asc=true&perPage=100`, pyHeaders(), "{}");
    expect(all.status).toBe(200);
    const ids = (all.json as { items: { openlayer_inference_id: string; openlayer_row_id: number }[] }).items;
    expect(ids.length).toBeGreaterThanOrEqual(4);
    expect(ids.every((item) => Number.isInteger(item.openlayer_row_id))).toBe(true);
  });

  it("rows.delete, sent with Accept: */*", async () => {
    const res = await send("DELETE", `/v1/inference-pipelines/${pipelineId}/rows/py-1`, { ...pyHeaders(), accept: "*/*" });
    expect(res.status).toBe(200);
    expect(res.text).toBe("");
    expect((await send("GET", `/v1/inference-pipelines/${pipelineId}/rows/py-1`, pyHeaders())).status).toBe(404);
  });

  /** The SDK's `Uploader`: the `fields` first, then `file`, and no Authorization (test/support/python-upload.ts). */
  async function upload(url: string, fields: Record<string, string>, filename: string, data: Uint8Array): Promise<number> {
    return (await pythonPost(url, fields, { filename, data })).status;
  }

  async function presign(objectName: string): Promise<{ url: string; storageUri: string; fields: Record<string, string> }> {
    // No body, but a JSON content type (and Content-Length: 0).
    const res = await send("POST", `/v1/storage/presigned-url?objectName=${encodeURIComponent(objectName)}`, pyHeaders(), "");
    expect(res.status).toBe(200);
    const answer = res.json as { url: string; storageUri: string; fields: Record<string, string> };
    // The SDK assigns into `fields`: it must be an object, even an empty one.
    expect(answer.fields).toEqual({});
    expect(answer.storageUri).toMatch(/^local:\/\//);
    return answer;
  }

  it("upload_batch_inferences: an Arrow IPC stream uploaded S3-style, then loaded with POST …/data", async () => {
    const objectName = `batch_data_1718031233.410203_${pipelineId}.arrow`;
    const presigned = await presign(objectName);
    const table = tableFromArrays({
      id: ["b-1", "b-2", "b-3"],
      question: ["one?", "two?", "three?"],
      output: ["1", "2", "3"],
      timestamp: Float64Array.from([1718031233, 1718031234, 1718031235]),
    });
    expect(await upload(presigned.url, presigned.fields, objectName, tableToIPC(table, "stream"))).toBe(200);
    const body = {
      storageUri: presigned.storageUri,
      performDataMerge: false,
      config: { outputColumnName: "output", inputVariableNames: ["question"], timestampColumnName: "timestamp", inferenceIdColumnName: "id" },
    };
    const loaded = await send("POST", `/v1/inference-pipelines/${pipelineId}/data`, pyHeaders(), JSON.stringify(body));
    expect(loaded.status).toBe(200);
    expect(loaded.json).toEqual({ success: true });
    expect(await row("b-2")).toEqual({
      openlayer_row_id: expect.any(Number),
      id: "b-2", question: "two?", output: "2", timestamp: 1718031234,
      openlayer_inference_id: "b-2", openlayer_timestamp: 1718031234, openlayer_output: "2",
    });
  });

  it("update_batch_inferences: ground truths merged by inference ID (performDataMerge: true)", async () => {
    const objectName = `batch_data_1718031300.5_${pipelineId}.arrow`;
    const presigned = await presign(objectName);
    const table = tableFromArrays({ id: ["b-1", "b-3"], label: ["one", "three"] });
    expect(await upload(presigned.url, presigned.fields, objectName, tableToIPC(table, "stream"))).toBe(200);
    const body = { storageUri: presigned.storageUri, performDataMerge: true, config: { inferenceIdColumnName: "id", groundTruthColumnName: "label" } };
    const merged = await send("POST", `/v1/inference-pipelines/${pipelineId}/data`, pyHeaders(), JSON.stringify(body));
    expect(merged.status).toBe(200);
    expect(await row("b-3")).toMatchObject({ output: "3", label: "three", openlayer_ground_truth: "three" });
    expect(await row("b-2")).not.toHaveProperty("openlayer_ground_truth");
  });

  it("a merge that names an unknown inference ID changes nothing", async () => {
    const objectName = "merge.arrow";
    const presigned = await presign(objectName);
    const table = tableFromArrays({ id: ["b-1", "nope"], label: ["changed", "x"] });
    expect(await upload(presigned.url, presigned.fields, objectName, tableToIPC(table, "stream"))).toBe(200);
    const body = { storageUri: presigned.storageUri, performDataMerge: true, config: { inferenceIdColumnName: "id", groundTruthColumnName: "label" } };
    const merged = await send("POST", `/v1/inference-pipelines/${pipelineId}/data`, pyHeaders(), JSON.stringify(body));
    expect(merged.status).toBe(400);
    expect((merged.json as { error: string }).error).toBe('1 rows of the file name inference IDs that the pipeline does not have, such as "nope"; nothing was merged');
    expect(await row("b-1")).toMatchObject({ label: "one", openlayer_ground_truth: "one" });
  });

  it("a CSV given by path goes up under the .arrow name it asked for, and loads by its content", async () => {
    const objectName = `batch_data_1718031400.1_${pipelineId}.arrow`;
    const presigned = await presign(objectName);
    const csv = "id,output,latency\nc-1,\"Hello, world\",12.5\nc-2,Bye,\n";
    // The multipart filename says .csv; the URL and storageUri were made for .arrow.
    expect(await upload(presigned.url, presigned.fields, objectName.replace(/\.arrow$/, ".csv"), Buffer.from(csv))).toBe(200);
    const body = { storageUri: presigned.storageUri, performDataMerge: false, config: { outputColumnName: "output", inferenceIdColumnName: "id", latencyColumnName: "latency" } };
    const loaded = await send("POST", `/v1/inference-pipelines/${pipelineId}/data`, pyHeaders(), JSON.stringify(body));
    expect(loaded.status).toBe(200);
    expect(await row("c-1")).toMatchObject({ output: "Hello, world", latency: 12.5, openlayer_latency: 12.5, openlayer_output: "Hello, world" });
    expect(await row("c-2")).toMatchObject({ output: "Bye", latency: null });
  });

  it("a storageUri of another workspace does not load: 404, as for a missing object", async () => {
    const presigned = await presign("ours.jsonl");
    expect(await upload(presigned.url, presigned.fields, "ours.jsonl", Buffer.from('{"id":"w-1","output":"ours"}\n'))).toBe(200);
    const other = await addWorkspace(t.app);
    const headers = { ...pyHeaders(), authorization: `Bearer ${other.key}` };
    const project = await send("POST", "/v1/projects", headers, JSON.stringify({ name: "theirs", taskType: "llm-base" }));
    const pipeline = await send("POST", `/v1/projects/${(project.json as { id: string }).id}/inference-pipelines`, headers, JSON.stringify({ name: "theirs", description: null }));
    const theirs = (pipeline.json as { id: string }).id;
    const body = { storageUri: presigned.storageUri, performDataMerge: false, config: { outputColumnName: "output", inferenceIdColumnName: "id" } };
    const loaded = await send("POST", `/v1/inference-pipelines/${theirs}/data`, headers, JSON.stringify(body));
    expect(loaded.status).toBe(404);
    expect(loaded.json).toEqual({ error: "Object not found", message: "Object not found", code: "not_found" });
    const rows = await send("POST", `/v1/inference-pipelines/${theirs}/rows`, headers, "{}");
    expect(rows.json).toEqual({ items: [] });
  });

  it("a load of a file with a bad row stores none of it", async () => {
    const presigned = await presign("bad.jsonl");
    const jsonl = '{"id":"j-1","output":"ok"}\n{"id":"j-2","output":"ok","latency":"slow"}\n';
    expect(await upload(presigned.url, presigned.fields, "bad.jsonl", Buffer.from(jsonl))).toBe(200);
    const body = { storageUri: presigned.storageUri, performDataMerge: false, config: { outputColumnName: "output", inferenceIdColumnName: "id", latencyColumnName: "latency" } };
    const loaded = await send("POST", `/v1/inference-pipelines/${pipelineId}/data`, pyHeaders(), JSON.stringify(body));
    expect(loaded.status).toBe(400);
    expect((loaded.json as { error: string }).error).toBe("row 2 of the file.latency must be a number");
    expect((await send("GET", `/v1/inference-pipelines/${pipelineId}/rows/j-1`, pyHeaders())).status).toBe(404);
  });

  it("a load that stops at a bad row early in a long file lets go of the file", async () => {
    const presigned = await presign("long.jsonl");
    // Many reads of the file (64 KiB each), the second row bad: the load stops after the first.
    const rows = ['{"id":"l-1","output":"ok"}', '{"id":"l-2","output":"ok","latency":"slow"}'];
    for (let i = 3; i <= 4000; i++) rows.push(`{"id":"l-${i}","output":"${"x".repeat(60)}"}`);
    expect(await upload(presigned.url, presigned.fields, "long.jsonl", Buffer.from(rows.join("\n")))).toBe(200);
    const body = { storageUri: presigned.storageUri, performDataMerge: false, config: { outputColumnName: "output", inferenceIdColumnName: "id", latencyColumnName: "latency" } };
    const loaded = await send("POST", `/v1/inference-pipelines/${pipelineId}/data`, pyHeaders(), JSON.stringify(body));
    expect(loaded.status).toBe(400);
    expect((loaded.json as { error: string }).error).toBe("row 2 of the file.latency must be a number");
    // The app runs in this process: none of its file descriptors may stay on the object (left to
    // the garbage collector, one did, and Node warned when it closed it).
    const key = presigned.storageUri.slice("local://".length);
    await until(async () => descriptorsOn(key).length === 0, "the load to close the object's file", 5_000);
    expect(descriptorsOn(key)).toEqual([]);
  });
});

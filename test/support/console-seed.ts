/**
 * A workspace with something on every page of the console, made through the public API as any
 * client would: a project with a commit evaluated on its dataset, a pipeline whose monitoring
 * tests were evaluated over eight hourly windows (one of them failing), gateway traffic through
 * fake providers with prices, a usage limit, a guardrail, and a VIEWER key.
 */
import { expect } from "vitest";
import type { TestApp } from "./app.ts";
import { pushBundle, tarOf } from "./bundles.ts";
import { evaluated } from "./evaluation.ts";
import { fakeModel } from "./fake-providers.ts";
import { setUpGateway, type GatewayFixture } from "./gateway-setup.ts";
import { client, type Call } from "./http.ts";
import { setUpWaitMs, until } from "./wait.ts";

export interface ConsoleSeed {
  gateway: GatewayFixture;
  projectId: string;
  pipelineId: string;
  commitId: string;
  /** The p90-latency test, and the window it fails (UNIX seconds of its start). */
  latencyTestId: string;
  failingWindowStart: number;
  /** The inference IDs of the failing window's rows, and of every other window's. */
  failingWindowRows: string[];
  otherRows: string[];
  /** Gateway requests made, by model. */
  requestsByModel: Record<string, number>;
  viewerKey: string;
  workspaceId: string;
}

const HOUR = 3600;
/** 2025-11-24 08:00 UTC, a whole hour: the first of eight windows. */
export const FIRST_WINDOW = 1_763_971_200;
/** Rows per window, and each window's latencies (ms): window 4 is slow, so its p90 fails. */
const WINDOWS: { latencies: number[]; topic: string }[] = [
  { latencies: [120, 180, 210], topic: "billing" },
  { latencies: [90, 140, 260, 200], topic: "billing" },
  { latencies: [150, 170, 320], topic: "shipping" },
  { latencies: [110, 240, 190, 230, 160], topic: "returns" },
  { latencies: [300, 900, 1400, 1250], topic: "shipping" },
  { latencies: [130, 210, 180, 150], topic: "billing" },
  { latencies: [100, 280, 230], topic: "returns" },
  { latencies: [160, 190, 220, 170], topic: "billing" },
];
const FAILING_WINDOW = 4;

export async function seedConsole(t: TestApp): Promise<ConsoleSeed> {
  const call = client(t.baseUrl, t.adminKey);
  const gateway = await setUpGateway(t);
  const ok = async (method: string, path: string, body?: unknown) => {
    const res = await call(method, path, { body });
    expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(300);
    return res.body as Record<string, unknown>;
  };

  const projectId = (await ok("POST", "/v1/projects", { name: "support-bot", taskType: "llm-base", description: "The support assistant" })).id as string;
  const pipelineId = (await ok("POST", `/v1/projects/${projectId}/inference-pipelines`, { name: "production", description: null })).id as string;
  const failingWindowRows: string[] = [];
  const otherRows: string[] = [];
  const rows = WINDOWS.flatMap((window, w) =>
    window.latencies.map((latency, i) => {
      const id = `w${w}-r${i}`;
      (w === FAILING_WINDOW ? failingWindowRows : otherRows).push(id);
      return {
        id,
        t: FIRST_WINDOW + w * HOUR + 60 * (i + 1),
        question: `Question ${i + 1} about ${window.topic}`,
        output: w === FAILING_WINDOW && i === 2 ? "Sorry, that took a while: here is the long answer you asked for." : `Answer ${i + 1}`,
        latency,
        topic: window.topic,
      };
    }),
  );
  const config = { outputColumnName: "output", inputVariableNames: ["question"], inferenceIdColumnName: "id", timestampColumnName: "t", latencyColumnName: "latency" };
  await ok("POST", `/v1/inference-pipelines/${pipelineId}/data-stream`, { config, rows });

  const monitoringTest = async (name: string, subtype: string, threshold: Record<string, unknown>) =>
    (await ok("POST", `/v1/projects/${projectId}/tests`, { name, description: null, type: "performance", subtype, thresholds: [threshold], usesProductionData: true, evaluationWindow: HOUR }))
      .id as string;
  const latencyTestId = await monitoringTest("p90 latency under half a second", "metricThreshold", { insightName: "metrics", measurement: "p90Latency", operator: "<", value: 500 });
  const volumeTestId = await monitoringTest("at least three rows an hour", "rowCount", { measurement: "rowCount", operator: ">=", value: 3 });
  for (const testId of [latencyTestId, volumeTestId]) {
    await evaluated(call, testId, { startTimestamp: FIRST_WINDOW, endTimestamp: FIRST_WINDOW + WINDOWS.length * HOUR });
  }

  // A commit, evaluated on its validation dataset as the Python SDK pushes it.
  await ok("POST", `/v1/projects/${projectId}/tests`, {
    name: "short answers", description: null, type: "integrity", subtype: "characterLength", usesValidationDataset: true, thresholds: [{ operator: "<=", value: 12 }],
  });
  await ok("POST", `/v1/projects/${projectId}/tests`, {
    name: "no duplicate answers", description: null, type: "integrity", subtype: "duplicateRowCount", usesValidationDataset: true,
    thresholds: [{ insightParameters: [{ name: "column_name", value: "output" }] }],
  });
  const bundle = await tarOf({
    "bot/openlayer.json": JSON.stringify({ name: "bot", taskType: "llm-base", outputColumnName: "output", inputVariableNames: ["question"] }),
    "bot/validation/dataset.csv": "question,output\nwhat is 2+2?,4\ncapital of France?,Paris\nwhat is 2*2?,4\n",
  });
  const commitId = await pushBundle(call, projectId, bundle);
  await until(async () => ["completed", "failed"].includes((await ok("GET", `/v1/versions/${commitId}`)).status as string), "the commit's evaluation", setUpWaitMs, 100);

  // Gateway traffic: priced models on two providers, and one provider failure.
  await ok("POST", "/v1/gateway/prices", { model: "claude-x", inputPerMillion: 3, outputPerMillion: 15 });
  await ok("POST", "/v1/gateway/prices", { model: "gpt-x", inputPerMillion: 2.5, outputPerMillion: 10 });
  const requestsByModel: Record<string, number> = { "claude-x": 3, "gpt-x": 2, [fakeModel("gpt-x", { status: 500 })]: 1 };
  for (const [model, count] of Object.entries(requestsByModel)) {
    for (let i = 0; i < count; i++) await gatewayCall(t, gateway.key, model);
  }
  const total = Object.values(requestsByModel).reduce((a, b) => a + b, 0);
  await until(async () => (await requestLogCount(call)) === total, "the request log to hold every request", setUpWaitMs, 100);

  const keys = (await ok("GET", "/v1/gateway/keys")).items as { id: string; name: string }[];
  await ok("POST", "/v1/gateway/usage-limits", { scope: "key", subjectId: keys[0]!.id, period: "daily", tokenLimit: 100_000 });
  await ok("POST", "/v1/gateway/guardrails", { kind: "pii", stage: "input", piiEntityTypes: ["CREDIT_CARD", "US_SSN"], onError: "fail_closed" });

  const workspaceId = (await ok("GET", "/v1/whoami")).workspaceId as string;
  const viewer = await ok("POST", `/v1/workspaces/${workspaceId}/api-keys`, { name: "reader", role: "VIEWER" });
  return {
    gateway,
    projectId,
    pipelineId,
    commitId,
    latencyTestId,
    failingWindowStart: FIRST_WINDOW + FAILING_WINDOW * HOUR,
    failingWindowRows,
    otherRows,
    requestsByModel,
    viewerKey: viewer.secureKey as string,
    workspaceId,
  };
}

async function gatewayCall(t: TestApp, key: string, model: string): Promise<void> {
  const anthropic = model.startsWith("claude");
  const res = await fetch(`${t.gatewayUrl}${anthropic ? "/v1/messages" : "/v1/responses"}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...(anthropic ? { "anthropic-version": "2023-06-01" } : {}) },
    body: JSON.stringify(anthropic ? { model, max_tokens: 64, messages: [{ role: "user", content: "Hello" }] } : { model, input: "Hello" }),
  });
  await res.arrayBuffer();
}

async function requestLogCount(call: Call): Promise<number> {
  return ((await call("GET", "/v1/gateway/request-log?perPage=1000")).body as { items: unknown[] }).items.length;
}

/**
 * Monitoring tests evaluated on a schedule, as time passes: each window once, at its end plus the
 * test's delay, with the rows that came late within the delay; the pipeline shows the outcome.
 * Windows are 5 s long and the delay 10 s, so that this runs in real time in about 20 s.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";
import { client, type Call } from "./support/http.ts";
import { sleep, until } from "./support/wait.ts";

let t: TestApp;
let call: Call;
let projectId: string;
let pipelineId: string;

const windowSeconds = 5;
const delaySeconds = 10;
const config = { outputColumnName: "output", inferenceIdColumnName: "id", timestampColumnName: "t" };

interface Result {
  status: string;
  statusMessage: string;
  dateDataStarts: string;
  dateDataEnds: string;
}

beforeAll(async () => {
  t = await startTestApp({ env: { WARDEN_EVALUATION_INTERVAL_MS: "200" } });
  call = client(t.baseUrl, t.adminKey);
  projectId = ((await call("POST", "/v1/projects", { body: { name: "scheduled", taskType: "llm-base" } })).body as { id: string }).id;
  pipelineId = ((await call("POST", `/v1/projects/${projectId}/inference-pipelines`, { body: { name: "prod", description: null } })).body as { id: string }).id;
});
afterAll(() => t?.stop());

describe("monitoring tests on a schedule", () => {
  it("evaluates each window once, after its delay, with late rows; the pipeline follows", { timeout: 90_000 }, async () => {
    const created = await call("POST", `/v1/projects/${projectId}/tests`, {
      body: {
        name: "at least two rows", description: null, type: "integrity", subtype: "rowCount", thresholds: [{ operator: ">=", value: 2 }],
        usesProductionData: true, evaluationWindow: windowSeconds, delayWindow: delaySeconds,
      },
    });
    expect(created.status).toBe(201);
    const testId = (created.body as { id: string }).id;

    // One row now, in the current window W; a second one, stamped in W, after W has ended.
    const now = Date.now() / 1000;
    const start = Math.floor(now / windowSeconds) * windowSeconds;
    const end = start + windowSeconds;
    const stream = (rows: object[]) => call("POST", `/v1/inference-pipelines/${pipelineId}/data-stream`, { body: { config, rows } });
    expect((await stream([{ id: "r1", t: now, output: "one" }])).status).toBe(200);
    await sleep(Math.max(0, (end - Date.now() / 1000) * 1000) + 100);
    expect((await stream([{ id: "r2", t: end - 1, output: "late" }])).status).toBe(200);
    expect(Date.now() / 1000).toBeLessThan(end + delaySeconds); // still within the delay

    const results = async () =>
      ((await call("GET", `/v1/tests/${testId}/results?inferencePipelineId=${pipelineId}`)).body as { items: Result[] }).items;
    const windowResult = async () => (await results()).find((r) => r.dateDataStarts === new Date(start * 1000).toISOString());
    await until(async () => (await windowResult()) !== undefined, "window W's result", 60_000, 100);
    expect(Date.now() / 1000).toBeGreaterThanOrEqual(end + delaySeconds);
    expect(await windowResult()).toMatchObject({
      status: "passing",
      statusMessage: "rowCount = 2 (threshold >= 2: holds)",
      dateDataEnds: new Date(end * 1000).toISOString(),
    });

    // The next window, which has no rows, is evaluated too, once: every window has one result.
    await until(async () => (await results()).length >= 2, "the next window's result", 60_000, 100);
    const all = await results();
    const starts = all.map((r) => r.dateDataStarts);
    expect(new Set(starts).size).toBe(starts.length);
    expect(all.find((r) => r.dateDataStarts === new Date(end * 1000).toISOString())).toMatchObject({
      status: "skipped",
      statusMessage: "The window holds no rows",
    });

    const pipeline = (await call("GET", `/v1/inference-pipelines/${pipelineId}`)).body as Record<string, unknown>;
    expect(pipeline).toMatchObject({ status: "completed", totalGoalCount: 1 });
    expect(typeof pipeline.dateLastEvaluated).toBe("string");
    // The next evaluation is due at the end of a window still to come, plus the delay.
    const next = Date.parse(pipeline.dateOfNextEvaluation as string) / 1000;
    expect((next - delaySeconds) % windowSeconds).toBe(0);
    expect(next).toBeGreaterThan(Date.now() / 1000 - windowSeconds);
  });
});

import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TestResultEntity } from "../src/tests/entities.ts";
import { startTestApp, type TestApp } from "./support/app.ts";
import { client, errorBody, type Call } from "./support/http.ts";
import { addWorkspace } from "./support/workspace.ts";

/**
 * The three results lists. Nothing evaluates tests yet, so the results here are written straight
 * into the database, as an evaluation would write them.
 */
let t: TestApp;
let call: Call;
let workspaceId: string;
let projectId: string;
let pipelineId: string;
let versionId: string;
let rowCountTest: string;
let latencyTest: string;
let archivedTest: string;

const hour = 3600;
/** Window starts, in UNIX seconds: three consecutive hours. */
const w1 = 1_763_971_200;
const w2 = w1 + hour;
const w3 = w2 + hour;

async function created(path: string, body: unknown): Promise<string> {
  const res = await call("POST", path, { body });
  expect(res.status).toBeLessThan(300);
  return (res.body as { id: string }).id;
}

/** Each result is written a second after the one before: the order among one window's results is theirs. */
let written = Date.UTC(2026, 0, 1);

async function result(testId: string, status: string, window: number | null, of: { pipeline?: string; version?: string }, message: string | null = null): Promise<string> {
  const em = t.app.orm.em.fork();
  const id = randomUUID();
  written += 1000;
  const now = new Date(written);
  em.create(TestResultEntity, {
    id,
    testId,
    workspaceId,
    projectVersionId: of.version ?? null,
    inferencePipelineId: of.pipeline ?? null,
    // Stored by enum name, as the service stores it.
    status: status.toUpperCase(),
    statusMessage: message,
    expectedValues: [],
    dateDataStarts: window === null ? null : new Date(window * 1000),
    dateDataEnds: window === null ? null : new Date((window + hour) * 1000),
    dateCreated: now,
    dateUpdated: now,
  });
  await em.flush();
  return id;
}

const ids: Record<string, string> = {};

beforeAll(async () => {
  t = await startTestApp();
  call = client(t.baseUrl, t.adminKey);
  const project = await call("POST", "/v1/projects", { body: { name: "results", taskType: "llm-base" } });
  projectId = (project.body as { id: string }).id;
  workspaceId = (project.body as { workspaceId: string }).workspaceId;
  pipelineId = await created(`/v1/projects/${projectId}/inference-pipelines`, { name: "prod", description: null });
  versionId = await created(`/v1/projects/${projectId}/versions`, { commit: { message: "m" }, storageUri: "local://x" });
  const monitoring = { description: null, thresholds: [{}], usesProductionData: true, evaluationWindow: hour };
  rowCountTest = await created(`/v1/projects/${projectId}/tests`, { ...monitoring, name: "rows", type: "integrity", subtype: "rowCount" });
  latencyTest = await created(`/v1/projects/${projectId}/tests`, { ...monitoring, name: "latency", type: "performance", subtype: "metricThreshold", usesMlModel: true });
  archivedTest = await created(`/v1/projects/${projectId}/tests`, { ...monitoring, name: "old", type: "integrity", subtype: "nullRowCount", archived: true });
  const p = { pipeline: pipelineId };
  ids.rows1 = await result(rowCountTest, "passing", w1, p);
  ids.rows2 = await result(rowCountTest, "failing", w2, p);
  ids.rows3 = await result(rowCountTest, "skipped", w3, p, "The window holds no rows");
  ids.latency2 = await result(latencyTest, "error", w2, p);
  ids.latency3 = await result(latencyTest, "passing", w3, p);
  ids.archived3 = await result(archivedTest, "passing", w3, p);
  ids.commit = await result(rowCountTest, "passing", null, { version: versionId });
});
afterAll(() => t?.stop());

function idsOf(body: unknown): string[] {
  return (body as { items: { id: string }[] }).items.map((item) => item.id);
}

describe("GET /v1/inference-pipelines/{id}/results", () => {
  const path = () => `/v1/inference-pipelines/${pipelineId}/results`;

  it("lists the pipeline's results, newest window first, archived tests left out", async () => {
    const res = await call("GET", path());
    expect(res.status).toBe(200);
    expect(idsOf(res.body)).toEqual([ids.latency3, ids.rows3, ids.latency2, ids.rows2, ids.rows1]);
    const [first] = (res.body as { items: Record<string, unknown>[] }).items;
    expect(first).toMatchObject({
      id: ids.latency3,
      inferencePipelineId: pipelineId,
      projectVersionId: null,
      status: "passing",
      statusMessage: null,
      goalId: latencyTest,
      goal: { id: latencyTest, name: "latency", subtype: "metricThreshold" },
      dateDataStarts: new Date(w3 * 1000).toISOString(),
      dateDataEnds: new Date((w3 + hour) * 1000).toISOString(),
      expectedValues: [],
    });
    // Within a window, the result written last comes first.
    expect(idsOf((await call("GET", `${path()}?includeArchived=true`)).body)).toEqual([ids.archived3, ids.latency3, ids.rows3, ids.latency2, ids.rows2, ids.rows1]);
  });

  it("filters by status (comma-encoded), by type, and by window", async () => {
    expect(idsOf((await call("GET", `${path()}?status=passing,failing`)).body)).toEqual([ids.latency3, ids.rows2, ids.rows1]);
    expect(idsOf((await call("GET", `${path()}?goalStatus=error`)).body)).toEqual([ids.latency2]);
    expect(idsOf((await call("GET", `${path()}?type=performance`)).body)).toEqual([ids.latency3, ids.latency2]);
    // Windows that end after the start and start before the end: the second hour only.
    expect(idsOf((await call("GET", `${path()}?startTimestamp=${w2}&endTimestamp=${w3}`)).body)).toEqual([ids.latency2, ids.rows2]);
    expect(idsOf((await call("GET", `${path()}?startTimestamp=${w3 + hour}`)).body)).toEqual([]);
  });

  it("pages with x-next", async () => {
    const first = await call("GET", `${path()}?perPage=2`);
    expect(idsOf(first.body)).toEqual([ids.latency3, ids.rows3]);
    expect(first.headers.get("x-next")).toBe(`${t.baseUrl}${path()}?perPage=2&page=2`);
    const last = await call("GET", `${path()}?perPage=2&page=3`);
    expect(idsOf(last.body)).toEqual([ids.rows1]);
    expect(last.headers.get("x-next")).toBeNull();
  });

  it("a pipeline of another workspace is a 404, and a bad status a 400", async () => {
    const other = await addWorkspace(t.app);
    const res = await call("GET", path(), { key: other.key });
    expect(res.status).toBe(404);
    expect(res.body).toEqual(errorBody("Inference pipeline not found", "not_found"));
    const bad = await call("GET", `${path()}?status=passing,great`);
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual(errorBody("status must be one of: running, passing, failing, skipped, error", "invalid_argument"));
  });
});

describe("GET /v1/tests/{id}/results", () => {
  it("lists one test's results, newest window first, with its last result that was not skipped", async () => {
    const res = await call("GET", `/v1/tests/${rowCountTest}/results`);
    expect(res.status).toBe(200);
    const body = res.body as { items: { id: string }[]; lastUnskippedResult: { id: string; status: string } };
    expect(idsOf(body)).toEqual([ids.rows3, ids.rows2, ids.rows1, ids.commit]);
    expect(body.lastUnskippedResult).toMatchObject({ id: ids.rows2, status: "failing" });
  });

  it("filters by pipeline, by commit, by status and by window; lastUnskippedResult ignores the filters", async () => {
    const byCommit = await call("GET", `/v1/tests/${rowCountTest}/results?projectVersionId=${versionId}`);
    expect(idsOf(byCommit.body)).toEqual([ids.commit]);
    expect((byCommit.body as { lastUnskippedResult: { id: string } }).lastUnskippedResult.id).toBe(ids.rows2);
    expect(idsOf((await call("GET", `/v1/tests/${rowCountTest}/results?inferencePipelineId=${pipelineId}&status=passing`)).body)).toEqual([ids.rows1]);
    expect(idsOf((await call("GET", `/v1/tests/${rowCountTest}/results?startTimestamp=${w3}&includeInsights=true`)).body)).toEqual([ids.rows3]);
  });

  it("an archived test's results are listed when asked for by its ID", async () => {
    const res = await call("GET", `/v1/tests/${archivedTest}/results`);
    expect(idsOf(res.body)).toEqual([ids.archived3]);
  });

  it("a test with no results answers an empty list and a null lastUnskippedResult; another workspace's test is a 404", async () => {
    const fresh = await created(`/v1/projects/${projectId}/tests`, { name: "fresh", description: null, type: "integrity", subtype: "isJson", thresholds: [{}] });
    expect((await call("GET", `/v1/tests/${fresh}/results`)).body).toEqual({ items: [], lastUnskippedResult: null });
    const other = await addWorkspace(t.app);
    const res = await call("GET", `/v1/tests/${rowCountTest}/results`, { key: other.key });
    expect(res.status).toBe(404);
    expect(res.body).toEqual(errorBody("Test not found", "not_found"));
  });
});

describe("GET /v1/versions/{id}/results", () => {
  it("takes comma-encoded statuses", async () => {
    expect(idsOf((await call("GET", `/v1/versions/${versionId}/results?status=passing,failing`)).body)).toEqual([ids.commit]);
    expect(idsOf((await call("GET", `/v1/versions/${versionId}/results?status=skipped`)).body)).toEqual([]);
  });
});

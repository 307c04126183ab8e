import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { iso, uuid } from "./support/matchers.ts";
import { startTestApp, type TestApp } from "./support/app.ts";
import { client, errorBody, type Call } from "./support/http.ts";

let t: TestApp;
let call: Call;
let projectId: string;

const threshold = { insightName: "duplicateRowCount", measurement: "duplicateRowCount", operator: "<=", value: 0 };

beforeAll(async () => {
  t = await startTestApp();
  call = client(t.baseUrl, t.adminKey);
  projectId = await newProject("tests");
});
afterAll(() => t?.stop());

async function newProject(name: string): Promise<string> {
  const res = await call("POST", "/v1/projects", { body: { name, taskType: "llm-base" } });
  return (res.body as { id: string }).id;
}

async function createTest(project: string, body: Record<string, unknown> = {}): Promise<{ id: string; number: number }> {
  const res = await call("POST", `/v1/projects/${project}/tests`, {
    body: { name: "no dupes", description: null, type: "integrity", subtype: "duplicateRowCount", thresholds: [threshold], ...body },
  });
  expect(res.status).toBe(201);
  return res.body as { id: string; number: number };
}

/** Polls the task URL until the task is done. Bounded: gives up after 15 s. */
async function settle(url: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 150; i++) {
    const res = await call("GET", url.slice(t.baseUrl.length));
    const body = res.body as { status: string };
    if (body.status === "completed" || body.status === "failed") return body;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`task at ${url} did not finish`);
}

describe("creating and listing tests", () => {
  it("creates a test with the contract's shape", async () => {
    const res = await call("POST", `/v1/projects/${projectId}/tests`, {
      body: {
        name: "Row count",
        description: "At least 10 rows",
        type: "integrity",
        subtype: "rowCount",
        thresholds: [
          { insightName: "metrics", insightParameters: [{ name: "column", value: "a" }], measurement: "rowCount", operator: ">=", thresholdMode: "manual", value: 10 },
          { insightName: "labels", measurement: "values", operator: "is", value: ["x", "y"] },
        ],
        usesProductionData: true,
        evaluationWindow: 3600,
        delayWindow: 0,
      },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: uuid,
      number: expect.any(Number),
      name: "Row count",
      description: "At least 10 rows",
      type: "integrity",
      subtype: "rowCount",
      thresholds: [
        { insightName: "metrics", insightParameters: [{ name: "column", value: "a" }], measurement: "rowCount", operator: ">=", thresholdMode: "manual", value: 10 },
        { insightName: "labels", insightParameters: null, measurement: "values", operator: "is", thresholdMode: "manual", value: ["x", "y"] },
      ],
      archived: false,
      suggested: false,
      usesMlModel: false,
      usesTrainingDataset: false,
      usesValidationDataset: false,
      usesReferenceDataset: false,
      usesProductionData: true,
      evaluationWindow: 3600,
      delayWindow: 0,
      defaultToAllPipelines: null,
      includePipelines: null,
      excludePipelines: null,
      includeHistoricalData: null,
      commentCount: 0,
      creatorId: uuid,
      dateCreated: iso,
      dateUpdated: iso,
      dateArchived: null,
      originProjectVersionId: null,
    });
  });

  it("numbers tests per project from 1, without gaps or repeats under concurrency", async () => {
    const project = await newProject("race");
    const created = await Promise.all(Array.from({ length: 30 }, () => createTest(project)));
    expect(created.map((c) => c.number).sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    const other = await newProject("race-2");
    expect((await createTest(other)).number).toBe(1);
  });

  it("applies all seven list filters", async () => {
    const project = await newProject("filters");
    const version = await call("POST", `/v1/projects/${project}/versions`, { body: { commit: { message: "v" }, storageUri: "s3://v" } });
    const versionId = (version.body as { id: string }).id;
    const plain = await createTest(project);
    const archived = await createTest(project, { archived: true });
    const monitoring = await createTest(project, { usesProductionData: true });
    const performance = await createTest(project, { type: "performance", subtype: "metricThreshold" });
    const fromVersion = await createTest(project, { originProjectVersionId: versionId });
    await t.app.orm.em.fork().execute("update test set suggested = true where project_id = ? and number = 6", [project]);
    const suggested = await createTest(project);
    await t.app.orm.em.fork().execute("update test set suggested = true where id = ?", [suggested.id]);

    const ids = async (query: string) => {
      const res = await call("GET", `/v1/projects/${project}/tests${query}`);
      expect(res.status).toBe(200);
      return (res.body as { items: { id: string }[] }).items.map((i) => i.id);
    };
    expect(await ids("")).toEqual([plain.id, monitoring.id, performance.id, fromVersion.id]);
    expect(await ids("?includeArchived=true")).toEqual([plain.id, archived.id, monitoring.id, performance.id, fromVersion.id]);
    expect(await ids("?suggested=true")).toEqual([suggested.id]);
    expect(await ids("?usesProductionData=true")).toEqual([monitoring.id]);
    expect(await ids("?usesProductionData=false")).toEqual([plain.id, performance.id, fromVersion.id]);
    expect(await ids("?type=performance")).toEqual([performance.id]);
    expect(await ids("?goalType=performance")).toEqual([performance.id]);
    expect(await ids(`?originVersionId=${versionId}`)).toEqual([fromVersion.id]);
    expect(await ids("?perPage=2&page=2")).toEqual([performance.id, fromVersion.id]);
  });

  it("refuses an originProjectVersionId from another project", async () => {
    const other = await newProject("other-origin");
    const version = await call("POST", `/v1/projects/${other}/versions`, { body: { commit: { message: "v" }, storageUri: "s3://v" } });
    const res = await call("POST", `/v1/projects/${projectId}/tests`, {
      body: { name: "x", description: null, type: "integrity", subtype: "rowCount", thresholds: [], originProjectVersionId: (version.body as { id: string }).id },
    });
    expect(res.status).toBe(404);
    expect(res.body).toEqual(errorBody("Project version not found", "not_found"));
  });
});

describe("bulk test update", () => {
  it("answers 202 with a task URL that the same key can poll, and applies every payload", async () => {
    const project = await newProject("bulk-ok");
    const a = await createTest(project);
    const b = await createTest(project);
    const res = await call("PUT", `/v1/projects/${project}/tests`, {
      body: {
        payloads: [
          { id: a.id, name: "renamed", description: "d", archived: true, suggested: false },
          { id: b.id, thresholds: [{ ...threshold, value: 5 }] },
        ],
      },
    });
    expect(res.status).toBe(202);
    const handle = res.body as { taskResultId: string; taskResultUrl: string };
    expect(handle).toEqual({ taskResultId: uuid, taskResultUrl: `${t.baseUrl}/v1/task-results/${handle.taskResultId}` });
    const task = await settle(handle.taskResultUrl);
    expect(task).toEqual({
      id: handle.taskResultId,
      type: "tests.bulk_update",
      status: "completed",
      dateCreated: iso,
      dateUpdated: iso,
      dateCompleted: iso,
      failures: [],
      error: null,
      result: { updatedIds: [a.id, b.id] },
    });
    const list = await call("GET", `/v1/projects/${project}/tests?includeArchived=true`);
    const [first, second] = (list.body as { items: Record<string, unknown>[] }).items;
    expect(first).toMatchObject({ id: a.id, name: "renamed", description: "d", archived: true, dateArchived: iso });
    expect(second).toMatchObject({ id: b.id, name: "no dupes", thresholds: [{ ...threshold, value: 5, insightParameters: null, thresholdMode: "manual" }] });

    const stranger = client(t.baseUrl, "sk-wm-not-a-key");
    expect((await stranger("GET", handle.taskResultUrl.slice(t.baseUrl.length))).status).toBe(401);
  });

  it("applies none of the payloads when one ID is not in the project, and says which and why", async () => {
    const project = await newProject("bulk-fail");
    const a = await createTest(project);
    const elsewhere = await createTest(await newProject("bulk-elsewhere"));
    const missing = randomUUID();
    const res = await call("PUT", `/v1/projects/${project}/tests`, {
      body: { payloads: [{ id: a.id, name: "must not stick" }, { id: elsewhere.id, name: "x" }, { id: missing }] },
    });
    expect(res.status).toBe(202);
    const task = await settle((res.body as { taskResultUrl: string }).taskResultUrl);
    expect(task).toMatchObject({
      status: "failed",
      failures: [
        { id: elsewhere.id, reason: "No test with this ID in the project" },
        { id: missing, reason: "No test with this ID in the project" },
      ],
      error: "2 of 3 tests could not be updated; no test was changed",
      result: null,
    });
    const list = await call("GET", `/v1/projects/${project}/tests`);
    expect((list.body as { items: { name: string }[] }).items[0]!.name).toBe("no dupes");
  });

  it("accepts 400 payloads", async () => {
    const project = await newProject("bulk-400");
    const tests = await Promise.all(Array.from({ length: 400 }, () => createTest(project)));
    const res = await call("PUT", `/v1/projects/${project}/tests`, {
      body: { payloads: tests.map((test, i) => ({ id: test.id, name: `n${i}` })) },
    });
    expect(res.status).toBe(202);
    const task = await settle((res.body as { taskResultUrl: string }).taskResultUrl);
    expect(task).toMatchObject({ status: "completed" });
    const names = await t.app.orm.em.fork().execute<{ n: number }[]>(
      "select count(*)::int as n from test where project_id = ? and name like 'n%'",
      [project],
    );
    expect(names[0]!.n).toBe(400);
  });

  it("completes a task that was queued when the process went away", async () => {
    const project = await newProject("bulk-restart");
    const a = await createTest(project);
    // A process that queues but runs no workers, then stops: the job waits in PostgreSQL.
    const queueOnly = await startTestApp({ database: t.database, adminKey: t.adminKey, env: { WARDEN_WORKERS: "false" } });
    const queued = await client(queueOnly.baseUrl, t.adminKey)("PUT", `/v1/projects/${project}/tests`, {
      body: { payloads: [{ id: a.id, name: "after restart" }] },
    });
    expect(queued.status).toBe(202);
    const { taskResultId } = queued.body as { taskResultId: string };
    const before = await call("GET", `/v1/task-results/${taskResultId}`);
    expect(before.body).toMatchObject({ status: "queued" });
    await queueOnly.stop();

    const restarted = await startTestApp({ database: t.database, adminKey: t.adminKey });
    try {
      const task = await settle(`${t.baseUrl}/v1/task-results/${taskResultId}`);
      expect(task).toMatchObject({ status: "completed" });
      const list = await call("GET", `/v1/projects/${project}/tests`);
      expect((list.body as { items: { name: string }[] }).items[0]!.name).toBe("after restart");
    } finally {
      await restarted.stop();
    }
  });
});

describe("test results", () => {
  it("lists a commit's results with the test, and filters them", async () => {
    const project = await newProject("results");
    const version = await call("POST", `/v1/projects/${project}/versions`, { body: { commit: { message: "v" }, storageUri: "s3://v" } });
    const versionId = (version.body as { id: string }).id;
    const live = await createTest(project);
    const archived = await createTest(project, { archived: true, type: "performance", subtype: "metricThreshold" });
    const em = t.app.orm.em.fork();
    const [{ workspace_id: workspaceId }] = await em.execute<{ workspace_id: string }[]>(
      "select workspace_id from project where id = ?",
      [project],
    );
    for (const [testId, status] of [[live.id, "PASSING"], [archived.id, "FAILING"]] as const) {
      await em.execute(
        `insert into test_result (id, test_id, workspace_id, project_version_id, status, expected_values, date_created, date_updated)
         values (?, ?, ?, ?, ?, '[{"measurement":"rowCount","lowerThreshold":10,"upperThreshold":null}]', now(), now())`,
        [randomUUID(), testId, workspaceId, versionId, status],
      );
    }
    const all = await call("GET", `/v1/versions/${versionId}/results?includeArchived=true`);
    expect(all.status).toBe(200);
    const items = (all.body as { items: Record<string, unknown>[] }).items;
    expect(items).toHaveLength(2);
    expect(items.find((i) => i.goalId === live.id)).toEqual({
      id: uuid,
      dateCreated: iso,
      dateUpdated: iso,
      dateDataStarts: null,
      dateDataEnds: null,
      inferencePipelineId: null,
      projectVersionId: versionId,
      status: "passing",
      statusMessage: null,
      goalId: live.id,
      goal: expect.objectContaining({ id: live.id, number: live.number }),
      // Stored without a measured value, as results were before Warden kept it.
      expectedValues: [{ measurement: "rowCount", lowerThreshold: 10, upperThreshold: null, measuredValue: null }],
    });
    const ids = async (query: string) =>
      ((await call("GET", `/v1/versions/${versionId}/results${query}`)).body as { items: { goalId: string }[] }).items.map((i) => i.goalId);
    expect(await ids("")).toEqual([live.id]);
    expect(await ids("?includeArchived=true&status=failing")).toEqual([archived.id]);
    expect(await ids("?includeArchived=true&goalStatus=failing")).toEqual([archived.id]);
    expect(await ids("?includeArchived=true&goalType=integrity")).toEqual([live.id]);
    const commit = await call("GET", `/v1/versions/${versionId}`);
    expect(commit.body).toMatchObject({ passingGoalCount: 1, failingGoalCount: 1, totalGoalCount: 2 });
  });
});

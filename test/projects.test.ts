import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { iso, uuid } from "./support/matchers.ts";
import { startTestApp, type TestApp } from "./support/app.ts";
import { client, errorBody, type Call } from "./support/http.ts";

let t: TestApp;
let call: Call;


beforeAll(async () => {
  t = await startTestApp();
  call = client(t.baseUrl, t.adminKey);
});
afterAll(() => t?.stop());

async function createProject(body: Record<string, unknown>): Promise<{ id: string }> {
  const res = await call("POST", "/v1/projects", { body });
  expect(res.status).toBe(201);
  return res.body as { id: string };
}

describe("projects", () => {
  it("creates a project with every contract field, ignoring unknown keys", async () => {
    const res = await call("POST", "/v1/projects", {
      body: {
        name: "support-bot",
        taskType: "llm-base",
        description: "Answers tickets",
        purpose: "support",
        modelTypes: ["gpt", "claude"],
        modelDeveloper: "acme",
        dataRetentionDays: 30,
        someClientExtra: { nested: true },
      },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: uuid,
      workspaceId: uuid,
      creatorId: uuid,
      dateCreated: iso,
      dateUpdated: iso,
      name: "support-bot",
      description: "Answers tickets",
      source: "api",
      taskType: "llm-base",
      versionCount: 0,
      inferencePipelineCount: 0,
      goalCount: 0,
      developmentGoalCount: 0,
      monitoringGoalCount: 0,
      links: { app: `${t.baseUrl}/app/projects/${(res.body as { id: string }).id}` },
      gitRepo: null,
      purpose: "support",
      modelTypes: ["gpt", "claude"],
      modelDeveloper: "acme",
      dataRetentionDays: 30,
    });
  });

  it("refuses a second project with the same name: 409, not retried", async () => {
    await createProject({ name: "dup", taskType: "llm-base" });
    const res = await call("POST", "/v1/projects", { body: { name: "dup", taskType: "llm-base" } });
    expect(res.status).toBe(409);
    expect(res.headers.get("x-should-retry")).toBe("false");
    expect(res.body).toEqual(errorBody('A project named "dup" already exists in this workspace', "already_exists"));
  });

  it("filters by name (alias projectName) and taskType", async () => {
    await createProject({ name: "Filter-Me", taskType: "tabular-regression" });
    const byName = await call("GET", "/v1/projects?name=filter-me");
    expect((byName.body as { items: { name: string }[] }).items.map((p) => p.name)).toEqual(["Filter-Me"]);
    const byAlias = await call("GET", "/v1/projects?projectName=Filter-Me");
    expect((byAlias.body as { items: { name: string }[] }).items.map((p) => p.name)).toEqual(["Filter-Me"]);
    const byType = await call("GET", "/v1/projects?taskType=tabular-regression");
    expect((byType.body as { items: { name: string }[] }).items.map((p) => p.name)).toEqual(["Filter-Me"]);
    const wildcard = await call("GET", "/v1/projects?name=%25");
    expect((wildcard.body as { items: unknown[] }).items).toEqual([]);
  });

  it("refuses NUL characters, which PostgreSQL cannot store, on every door", async () => {
    const res = await call("POST", "/v1/projects", { body: { name: "a\u0000b", taskType: "llm-base" } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(errorBody("name must not contain NUL characters", "invalid_argument"));
    const filter = await call("GET", "/v1/projects?name=%00");
    expect(filter.status).toBe(400);
    const { id } = await createProject({ name: "nul-target", taskType: "llm-base" });
    const test = await call("POST", `/v1/projects/${id}/tests`, {
      body: {
        name: "t",
        description: null,
        type: "integrity",
        subtype: "s",
        thresholds: [{ insightName: "a", measurement: "m", operator: "<", value: ["ok", "\u0000"] }],
      },
    });
    expect(test.status).toBe(400);
    expect(test.body).toEqual(
      errorBody("thresholds[0].value.listValue.values[1].stringValue must not contain NUL characters", "invalid_argument"),
    );
  });

  it("PATCH changes only the given fields", async () => {
    const { id } = await createProject({ name: "patch-me", taskType: "llm-base", description: "old", purpose: "p" });
    const res = await call("PATCH", `/v1/projects/${id}`, {
      body: { description: "new", modelTypes: ["x"], dataRetentionDays: 7 },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      name: "patch-me",
      description: "new",
      purpose: "p",
      modelTypes: ["x"],
      dataRetentionDays: 7,
    });
    const rename = await call("PATCH", `/v1/projects/${id}`, { body: { name: "dup" } });
    expect(rename.status).toBe(409);
    const cleared = await call("PATCH", `/v1/projects/${id}`, {
      body: { description: null, purpose: null, modelTypes: null, dataRetentionDays: null },
    });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toMatchObject({ name: "patch-me", description: null, purpose: null, modelTypes: [], dataRetentionDays: null });
    const pathField = await call("PATCH", `/v1/projects/${id}`, { body: { projectId: id } });
    expect(pathField.status).toBe(400);
    expect(pathField.body).toEqual(errorBody("projectId is not an allowed property", "invalid_argument"));
    const mask = await call("PATCH", `/v1/projects/${id}`, { body: { updateMask: "name" } });
    expect(mask.status).toBe(400);
    expect(mask.body).toEqual(errorBody("updateMask is not an allowed property", "invalid_argument"));
  });

  it("counts commits, pipelines and tests for real", async () => {
    const { id } = await createProject({ name: "counts", taskType: "llm-base" });
    for (const message of ["one", "two"]) {
      await call("POST", `/v1/projects/${id}/versions`, { body: { commit: { message }, storageUri: "s3://b/k" } });
    }
    await call("POST", `/v1/projects/${id}/inference-pipelines`, { body: { name: "prod", description: null } });
    const threshold = { insightName: "n", measurement: "m", operator: "<=", value: 1 };
    for (const usesProductionData of [false, true, true]) {
      await call("POST", `/v1/projects/${id}/tests`, {
        body: { name: "t", description: null, type: "integrity", subtype: "rowCount", thresholds: [threshold], usesProductionData },
      });
    }
    const list = await call("GET", "/v1/projects?name=counts");
    expect((list.body as { items: unknown[] }).items[0]).toMatchObject({
      versionCount: 2,
      inferencePipelineCount: 1,
      goalCount: 3,
      developmentGoalCount: 1,
      monitoringGoalCount: 2,
    });
  });

  it("DELETE removes the project and everything in it", async () => {
    const { id } = await createProject({ name: "doomed", taskType: "llm-base" });
    const version = await call("POST", `/v1/projects/${id}/versions`, { body: { commit: { message: "m" }, storageUri: "s3://x" } });
    const pipeline = await call("POST", `/v1/projects/${id}/inference-pipelines`, { body: { name: "p", description: null } });
    await call("POST", `/v1/projects/${id}/tests`, {
      body: { name: "t", description: null, type: "integrity", subtype: "rowCount", thresholds: [] },
    });
    const res = await call("DELETE", `/v1/projects/${id}`);
    expect(res.status).toBe(200);
    expect(res.text).toBe("");
    expect((await call("GET", `/v1/versions/${(version.body as { id: string }).id}`)).status).toBe(404);
    expect((await call("GET", `/v1/inference-pipelines/${(pipeline.body as { id: string }).id}`)).status).toBe(404);
    const left = await t.app.orm.em.fork().execute<{ n: number }[]>(
      "select (select count(*) from test where project_id = ?)::int + (select count(*) from project_version where project_id = ?)::int as n",
      [id, id],
    );
    expect(left[0]!.n).toBe(0);
    const again = await call("DELETE", `/v1/projects/${id}`);
    expect(again.status).toBe(404);
    expect(again.body).toEqual(errorBody("Project not found", "not_found"));
  });
});

describe("pagination", () => {
  it("walks 250 items from perPage=100 by x-next, each exactly once, in a stable order", async () => {
    const { id } = await createProject({ name: "paged", taskType: "llm-base" });
    const created: string[] = [];
    for (let i = 0; i < 250; i += 25) {
      const batch = await Promise.all(
        Array.from({ length: 25 }, (_, j) =>
          call("POST", `/v1/projects/${id}/inference-pipelines`, { body: { name: `p${i + j}`, description: null } }),
        ),
      );
      created.push(...batch.map((r) => (r.body as { id: string }).id));
    }
    const seen: string[] = [];
    let url: string | null = `${t.baseUrl}/v1/projects/${id}/inference-pipelines?perPage=100`;
    let pages = 0;
    while (url) {
      const res = await call("GET", url.slice(t.baseUrl.length));
      expect(res.status).toBe(200);
      seen.push(...(res.body as { items: { id: string }[] }).items.map((p) => p.id));
      url = res.headers.get("x-next");
      pages++;
    }
    expect(pages).toBe(3);
    expect(seen).toHaveLength(250);
    expect(new Set(seen).size).toBe(250);
    expect(new Set(seen)).toEqual(new Set(created));
    const again: string[] = [];
    for (const page of [1, 2, 3]) {
      const res = await call("GET", `/v1/projects/${id}/inference-pipelines?perPage=100&page=${page}`);
      again.push(...(res.body as { items: { id: string }[] }).items.map((p) => p.id));
    }
    expect(again).toEqual(seen);
  });
});

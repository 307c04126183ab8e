import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { iso, uuid } from "./support/matchers.ts";
import { startTestApp, type TestApp } from "./support/app.ts";
import { client, errorBody, type Call } from "./support/http.ts";
import { setUpWaitMs, until } from "./support/wait.ts";

let t: TestApp;
let call: Call;
let projectId: string;


beforeAll(async () => {
  t = await startTestApp();
  call = client(t.baseUrl, t.adminKey);
  const res = await call("POST", "/v1/projects", { body: { name: "cp", taskType: "llm-base" } });
  projectId = (res.body as { id: string }).id;
});
afterAll(() => t?.stop());

describe("commits", () => {
  it("creates a commit that starts queued, and gets it back", async () => {
    const res = await call("POST", `/v1/projects/${projectId}/versions`, {
      body: { commit: { message: "first", source: "cli", fileSize: 1234 }, storageUri: "s3://bucket/key", archived: false },
    });
    expect(res.status).toBe(201);
    const id = (res.body as { id: string }).id;
    expect(res.body).toEqual({
      id: uuid,
      projectId,
      dateCreated: iso,
      dateArchived: null,
      archived: false,
      status: "queued",
      statusMessage: "Waiting to be evaluated",
      failingGoalCount: 0,
      passingGoalCount: 0,
      totalGoalCount: 0,
      mlModelId: null,
      trainingDatasetId: null,
      validationDatasetId: null,
      deploymentStatus: "Deployed",
      links: { app: `${t.baseUrl}/app/projects/${projectId}/versions/${id}` },
      commit: {
        id,
        authorId: uuid,
        message: "first",
        storageUri: "s3://bucket/key",
        fileSize: 1234,
        mlModelId: null,
        trainingDatasetId: null,
        validationDatasetId: null,
        dateCreated: iso,
        gitCommitRef: null,
        gitCommitSha: null,
        gitCommitUrl: null,
      },
    });
    const got = await call("GET", `/v1/versions/${id}`);
    expect(got.status).toBe(200);
    // The evaluation may have started already; all else is as created.
    const { status: _status, statusMessage: _message, ...rest } = got.body as Record<string, unknown>;
    const { status: _created, statusMessage: _createdMessage, ...createdRest } = res.body as Record<string, unknown>;
    expect(rest).toEqual(createdRest);
    const viaApiKeyHeader = await call("GET", `/v1/versions/${id}`, { key: null, headers: { "x-api-key": t.adminKey } });
    expect(viaApiKeyHeader.status).toBe(200);
  });

  it("lists the commits of a project, newest first", async () => {
    await call("POST", `/v1/projects/${projectId}/versions`, { body: { commit: { message: "second" }, storageUri: "s3://b/2" } });
    const res = await call("GET", `/v1/projects/${projectId}/versions`);
    expect(res.status).toBe(200);
    expect((res.body as { items: { commit: { message: string } }[] }).items.map((v) => v.commit.message)).toEqual([
      "second",
      "first",
    ]);
  });

  it("fails the evaluation of a commit whose bundle is not in this server's storage, saying why", async () => {
    const versions = await call("GET", `/v1/projects/${projectId}/versions`);
    const id = (versions.body as { items: { id: string; commit: { message: string } }[] }).items.find((v) => v.commit.message === "first")!.id;
    await until(async () => ((await call("GET", `/v1/versions/${id}`)).body as { status: string }).status === "failed", "the commit's evaluation to fail", setUpWaitMs);
    const got = await call("GET", `/v1/versions/${id}`);
    expect(got.body).toMatchObject({
      status: "failed",
      statusMessage: 'The bundle at s3://bucket/key could not be read: storageUri has the scheme "s3", but this server keeps uploads at local:// URIs',
    });
  });

  it("lists no test results for a commit nothing has evaluated", async () => {
    const versions = await call("GET", `/v1/projects/${projectId}/versions`);
    const id = (versions.body as { items: { id: string }[] }).items[0]!.id;
    const res = await call("GET", `/v1/versions/${id}/results?status=passing&type=integrity&includeArchived=true`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [] });
    expect(res.headers.get("x-next")).toBeNull();
  });
});

describe("inference pipelines", () => {
  it("creates with 200, gets, expands, updates and deletes", async () => {
    const created = await call("POST", `/v1/projects/${projectId}/inference-pipelines`, {
      body: { name: "production", description: "live traffic" },
    });
    expect(created.status).toBe(200);
    const id = (created.body as { id: string }).id;
    expect(created.body).toEqual({
      id: uuid,
      projectId,
      workspaceId: uuid,
      name: "production",
      description: "live traffic",
      dateCreated: iso,
      dateUpdated: iso,
      dateLastEvaluated: null,
      dateLastSampleReceived: null,
      dateOfNextEvaluation: null,
      status: "queued",
      statusMessage: null,
      passingGoalCount: 0,
      failingGoalCount: 0,
      totalGoalCount: 0,
      totalRecordsCount: null,
      links: { app: `${t.baseUrl}/app/projects/${projectId}/inference-pipelines/${id}` },
      project: null,
      workspace: null,
      retentionDays: null,
    });

    const expanded = await call("GET", `/v1/inference-pipelines/${id}?expand=project,workspace`);
    expect(expanded.status).toBe(200);
    expect(expanded.body).toMatchObject({
      project: { id: projectId, name: "cp", taskType: "llm-base", description: null },
      workspace: { id: (created.body as { workspaceId: string }).workspaceId, slug: "default", name: "Default" },
    });
    const onlyProject = await call("GET", `/v1/inference-pipelines/${id}?expand=project`);
    expect(onlyProject.body).toMatchObject({ project: { id: projectId }, workspace: null });
    const badExpand = await call("GET", `/v1/inference-pipelines/${id}?expand=owner`);
    expect(badExpand.status).toBe(400);
    expect(badExpand.body).toEqual(errorBody("expand must be one of: project, workspace", "invalid_argument"));

    const updated = await call("PUT", `/v1/inference-pipelines/${id}`, {
      body: { name: "prod", description: null, referenceDatasetUri: "s3://ref/data.csv" },
    });
    expect(updated.status).toBe(200);
    // The keys present are the fields to change: null clears.
    expect(updated.body).toMatchObject({ name: "prod", description: null });
    expect(updated.body).not.toHaveProperty("referenceDatasetUri");
    const stored = await t.app.orm.em.fork().execute<{ reference_dataset_uri: string }[]>(
      "select reference_dataset_uri from inference_pipeline where id = ?",
      [id],
    );
    expect(stored[0]!.reference_dataset_uri).toBe("s3://ref/data.csv");

    const untouched = await call("PUT", `/v1/inference-pipelines/${id}`, { body: { description: "kept" } });
    expect(untouched.body).toMatchObject({ name: "prod", description: "kept" });
    const cleared = await call("PUT", `/v1/inference-pipelines/${id}`, { body: { referenceDatasetUri: null } });
    expect(cleared.status).toBe(200);
    const afterClear = await t.app.orm.em.fork().execute<{ reference_dataset_uri: string | null }[]>(
      "select reference_dataset_uri from inference_pipeline where id = ?",
      [id],
    );
    expect(afterClear[0]!.reference_dataset_uri).toBeNull();
    const noName = await call("PUT", `/v1/inference-pipelines/${id}`, { body: { name: null } });
    expect(noName.status).toBe(400);
    expect(noName.body).toEqual(errorBody("name is required", "invalid_argument"));

    const tooLong = await call("PUT", `/v1/inference-pipelines/${id}`, { body: { referenceDatasetUri: "x".repeat(1001) } });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body).toEqual(errorBody("referenceDatasetUri must be at most 1000 characters", "invalid_argument"));

    const deleted = await call("DELETE", `/v1/inference-pipelines/${id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.text).toBe("");
    expect((await call("GET", `/v1/inference-pipelines/${id}`)).status).toBe(404);
  });

  it("filters the list by name", async () => {
    for (const name of ["alpha", "beta"]) {
      await call("POST", `/v1/projects/${projectId}/inference-pipelines`, { body: { name, description: null } });
    }
    const res = await call("GET", `/v1/projects/${projectId}/inference-pipelines?name=beta`);
    expect((res.body as { items: { name: string }[] }).items.map((p) => p.name)).toEqual(["beta"]);
  });
});

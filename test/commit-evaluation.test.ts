/**
 * A commit as the Python SDK pushes it: a tar of the project folder uploaded through a presigned
 * URL, then `POST /projects/{id}/versions`, then `GET /versions/{id}` polled until the commit is
 * `completed` or `failed` (the SDK's wait_for_commit_completion).
 */
import { gzipSync } from "node:zlib";
import { pack } from "tar-stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";
import { client, type Call } from "./support/http.ts";
import { pythonPost } from "./support/python-upload.ts";
import { iso, uuid } from "./support/matchers.ts";
import { setUpWaitMs, until } from "./support/wait.ts";

let t: TestApp;
let call: Call;
let projectId: string;
const testIds: Record<string, string> = {};

/** A tar made as Python's tarfile makes one of a folder: the folder's name first in every path. */
async function tarOf(files: Record<string, string>): Promise<Buffer> {
  const archive = pack();
  for (const [name, content] of Object.entries(files)) archive.entry({ name }, content);
  archive.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of archive) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** presigned URL → upload (S3 style, as the SDK's default) → create the version. */
async function push(bundle: Uint8Array, objectName = "bundle.tar"): Promise<string> {
  const presigned = await call("POST", `/v1/storage/presigned-url?objectName=${objectName}`);
  const { url, fields, storageUri } = presigned.body as { url: string; fields: Record<string, string>; storageUri: string };
  expect((await pythonPost(url, fields, { filename: objectName, data: bundle })).status).toBe(200);
  const created = await call("POST", `/v1/projects/${projectId}/versions`, { body: { commit: { message: "New commit", source: "cli" }, storageUri } });
  expect(created.status).toBe(201);
  return (created.body as { id: string }).id;
}

/** Polls the commit as the SDK does, until it is done. */
async function settled(versionId: string): Promise<Record<string, unknown>> {
  let body: Record<string, unknown> = {};
  await until(async () => {
    body = (await call("GET", `/v1/versions/${versionId}`)).body as Record<string, unknown>;
    return body.status === "completed" || body.status === "failed";
  }, "the commit's evaluation to end", setUpWaitMs, 100);
  return body;
}

const config = JSON.stringify({ name: "qa", taskType: "llm-base", outputColumnName: "output", inputVariableNames: ["question"] });
const dataset = "question,output\nwhat is 2+2?,4\n";

beforeAll(async () => {
  t = await startTestApp();
  call = client(t.baseUrl, t.adminKey);
  const project = await call("POST", "/v1/projects", { body: { name: "commits", taskType: "llm-base" } });
  projectId = (project.body as { id: string }).id;
  const test = async (name: string, body: Record<string, unknown>) => {
    const res = await call("POST", `/v1/projects/${projectId}/tests`, { body: { name, description: null, type: "integrity", thresholds: [{}], ...body } });
    expect(res.status).toBe(201);
    testIds[name] = (res.body as { id: string }).id;
  };
  await test("lengths", { subtype: "characterLength", usesValidationDataset: true });
  await test("training dupes", { subtype: "duplicateRowCount", usesTrainingDataset: true });
  await test("monitoring only", { subtype: "rowCount", usesProductionData: true });
});
afterAll(() => t?.stop());

describe("a commit pushed as the Python SDK pushes it", () => {
  it("goes queued → completed, with a result for each development test saying why it was not measured", async () => {
    const bundle = await tarOf({ "qa/openlayer.json": config, "qa/validation/dataset.csv": dataset });
    const id = await push(bundle);
    const done = await settled(id);
    expect(done).toMatchObject({
      id,
      status: "completed",
      statusMessage: "Evaluated: 2 development tests, none of them measured by this server yet (each result says why it was skipped)",
      passingGoalCount: 0,
      failingGoalCount: 0,
      totalGoalCount: 2,
    });
    const results = await call("GET", `/v1/versions/${id}/results`);
    expect(results.status).toBe(200);
    const items = (results.body as { items: Record<string, unknown>[] }).items;
    const byTest = Object.fromEntries(items.map((item) => [item.goalId as string, item]));
    expect(Object.keys(byTest).sort()).toEqual([testIds.lengths, testIds["training dupes"]].sort());
    expect(byTest[testIds.lengths!]).toMatchObject({
      id: uuid,
      projectVersionId: id,
      inferencePipelineId: null,
      status: "skipped",
      statusMessage: "characterLength is not evaluated by this server",
      dateDataStarts: null,
      dateDataEnds: null,
      dateCreated: iso,
    });
    expect(byTest[testIds["training dupes"]!]).toMatchObject({
      status: "skipped",
      statusMessage: "The bundle has no training dataset (training/dataset.csv or training/dataset.jsonl)",
    });
  });

  it("reads a gzipped tar, and files at the top of it", async () => {
    const bundle = gzipSync(await tarOf({ "openlayer.json": config, "validation/dataset.jsonl": '{"question":"q","output":"a"}\n', "training/dataset.csv": dataset }));
    const done = await settled(await push(bundle, "bundle.tar.gz"));
    expect(done).toMatchObject({ status: "completed", totalGoalCount: 2 });
  });

  const broken: [string, () => Promise<Uint8Array>, string][] = [
    ["not an archive", async () => Buffer.from("just some text, not a tar".repeat(40)), "The bundle is not a tar archive: "],
    ["no openlayer.json", async () => tarOf({ "qa/validation/dataset.csv": dataset }), "The bundle has no openlayer.json: push a folder that holds one, with the commit's config"],
    ["openlayer.json that is not JSON", async () => tarOf({ "qa/openlayer.json": "{name: qa" }), "qa/openlayer.json is not valid JSON: "],
    ["a zip", async () => Buffer.concat([Buffer.from([0x50, 0x4b, 0x03, 0x04]), Buffer.alloc(100)]), "The bundle is a zip archive; upload a tar or tar.gz archive instead"],
  ];
  it.each(broken)("a bundle that is %s ends failed, saying why, and writes no result", async (_name, make, reason) => {
    const id = await push(await make());
    const done = await settled(id);
    expect(done.status).toBe("failed");
    const prefix = `The bundle at ${(done.commit as { storageUri: string }).storageUri} could not be read: `;
    expect(String(done.statusMessage).startsWith(prefix + reason)).toBe(true);
    expect((await call("GET", `/v1/versions/${id}/results`)).body).toEqual({ items: [] });
  });

  it("a storageUri of another workspace's object fails as a missing one does", async () => {
    const created = await call("POST", `/v1/projects/${projectId}/versions`, {
      body: { commit: { message: "theirs" }, storageUri: "local://00000000-0000-4000-8000-000000000000/00000000-0000-4000-8000-000000000000/bundle.tar" },
    });
    const done = await settled((created.body as { id: string }).id);
    expect(done).toMatchObject({ status: "failed", statusMessage: expect.stringMatching(/could not be read: Object not found$/) });
  });
});

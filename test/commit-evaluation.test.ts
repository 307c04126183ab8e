/**
 * A commit as the Python SDK pushes it: a tar of the project folder uploaded through a presigned
 * URL, then `POST /projects/{id}/versions`, then `GET /versions/{id}` polled until the commit is
 * `completed` or `failed` (the SDK's wait_for_commit_completion).
 */
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";
import { descriptorsOn } from "./support/descriptors.ts";
import { client, type Call } from "./support/http.ts";
import { pushBundle, tarOf } from "./support/bundles.ts";
import { iso, uuid } from "./support/matchers.ts";
import { setUpWaitMs, until } from "./support/wait.ts";

let t: TestApp;
let call: Call;
let projectId: string;
const testIds: Record<string, string> = {};

const push = (bundle: Uint8Array, objectName?: string) => pushBundle(call, projectId, bundle, objectName);

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
/**
 * Outputs "4", "Paris", "4": lengths 1, 5, 1 (mean 7/3 = 2.33333333333), one duplicate output, and
 * two rows whose output is "4".
 */
const dataset = "question,output\nwhat is 2+2?,4\ncapital of France?,Paris\nwhat is 2*2?,4\n";

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
  await test("lengths", { subtype: "characterLength", usesValidationDataset: true, thresholds: [{ operator: "<=", value: 3 }] });
  await test("output dupes", { subtype: "duplicateRowCount", usesValidationDataset: true, thresholds: [{ insightParameters: [{ name: "column_name", value: "output" }] }] });
  await test("fours", {
    subtype: "sqlQuery",
    usesValidationDataset: true,
    thresholds: [{ measurement: "result", insightParameters: [{ name: "query", value: "SELECT count(*) FROM df WHERE output = '4'" }], operator: "is", value: 2 }],
  });
  await test("training dupes", { subtype: "duplicateRowCount", usesTrainingDataset: true });
  await test("monitoring only", { subtype: "rowCount", usesProductionData: true });
});
afterAll(() => t?.stop());

describe("a commit pushed as the Python SDK pushes it", () => {
  it("goes queued → completed, with each development test measured on its dataset", async () => {
    const bundle = await tarOf({ "qa/openlayer.json": config, "qa/validation/dataset.csv": dataset });
    const id = await push(bundle);
    const done = await settled(id);
    expect(done).toMatchObject({
      id,
      status: "completed",
      statusMessage: "Evaluated 4 development tests: 2 passing, 1 failing, 1 skipped, 0 with errors",
      passingGoalCount: 2,
      failingGoalCount: 1,
      totalGoalCount: 4,
    });
    const results = await call("GET", `/v1/versions/${id}/results`);
    expect(results.status).toBe(200);
    const items = (results.body as { items: Record<string, unknown>[] }).items;
    const byTest = Object.fromEntries(items.map((item) => [item.goalId as string, item]));
    expect(Object.keys(byTest).sort()).toEqual([testIds.lengths, testIds["output dupes"], testIds.fours, testIds["training dupes"]].sort());
    expect(byTest[testIds.lengths!]).toMatchObject({
      id: uuid,
      projectVersionId: id,
      inferencePipelineId: null,
      status: "passing",
      statusMessage: "characterLength = 2.33333333333 (threshold <= 3: holds)",
      expectedValues: [{ measurement: "characterLength", lowerThreshold: null, upperThreshold: 3, measuredValue: expect.closeTo(7 / 3, 9) }],
      dateDataStarts: null,
      dateDataEnds: null,
      dateCreated: iso,
    });
    expect(byTest[testIds["output dupes"]!]).toMatchObject({ status: "failing", statusMessage: "duplicateRowCount = 1 (threshold <= 0: does not hold)" });
    expect(byTest[testIds.fours!]).toMatchObject({ status: "passing", statusMessage: "result = 2 (threshold is 2: holds)" });
    expect(byTest[testIds["training dupes"]!]).toMatchObject({
      status: "skipped",
      statusMessage: "The bundle has no training dataset (training/dataset.csv or training/dataset.jsonl)",
    });
  });

  it("measures a JSON Lines dataset as it does a CSV one", async () => {
    const rows = ['{"question":"a","output":"4"}', '{"question":"b","output":"Paris"}', '{"question":"c","output":"4"}'];
    const bundle = await tarOf({ "qa/openlayer.json": config, "qa/validation/dataset.jsonl": rows.join("\n") + "\n" });
    const done = await settled(await push(bundle));
    expect(done).toMatchObject({ status: "completed", passingGoalCount: 2, failingGoalCount: 1, totalGoalCount: 4 });
  });

  it("a dataset that cannot be read ends the commit failed, naming the file and the line", async () => {
    const bundle = await tarOf({ "qa/openlayer.json": config, "qa/validation/dataset.csv": "question,output\n\"unterminated,4\n" });
    const id = await push(bundle);
    const done = await settled(id);
    expect(done.status).toBe("failed");
    expect(String(done.statusMessage)).toMatch(/could not be read: qa\/validation\/dataset\.csv: .*line/);
    expect((await call("GET", `/v1/versions/${id}/results`)).body).toEqual({ items: [] });
  });

  it("reads a gzipped tar, and files at the top of it", async () => {
    const bundle = gzipSync(await tarOf({ "openlayer.json": config, "validation/dataset.jsonl": '{"question":"q","output":"a"}\n', "training/dataset.csv": dataset }));
    const done = await settled(await push(bundle, "bundle.tar.gz"));
    expect(done).toMatchObject({ status: "completed", totalGoalCount: 4 });
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

  it("a zip of many reads (a failure at its first bytes) lets go of the file", async () => {
    const id = await push(Buffer.concat([Buffer.from([0x50, 0x4b, 0x03, 0x04]), Buffer.alloc(300 * 1024)]));
    const done = await settled(id);
    expect(done.statusMessage).toMatch(/The bundle is a zip archive/);
    // The app runs in this process: none of its file descriptors may stay on the object (left to
    // the garbage collector, one did, and Node warned when it closed it).
    const key = (done.commit as { storageUri: string }).storageUri.slice("local://".length);
    await until(async () => descriptorsOn(key).length === 0, "the evaluation to close the bundle's file", 5_000);
    expect(descriptorsOn(key)).toEqual([]);
  });

  it("a storageUri of another workspace's object fails as a missing one does", async () => {
    const created = await call("POST", `/v1/projects/${projectId}/versions`, {
      body: { commit: { message: "theirs" }, storageUri: "local://00000000-0000-4000-8000-000000000000/00000000-0000-4000-8000-000000000000/bundle.tar" },
    });
    const done = await settled((created.body as { id: string }).id);
    expect(done).toMatchObject({ status: "failed", statusMessage: expect.stringMatching(/could not be read: Object not found$/) });
  });
});

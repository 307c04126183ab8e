import { once } from "node:events";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";
import { client, type Call } from "./support/http.ts";
import { spawnWarden, type Spawned } from "./support/processes.ts";
import { setUpWaitMs, until } from "./support/wait.ts";
import { waitingOnLock } from "./support/database.ts";
import { pushBundle, tarOf } from "./support/bundles.ts";

/**
 * A bulk test update whose process is killed while it runs the task is run again soon after, by a
 * restarted process: pg-boss fails a job whose worker stops beating (heartbeat 10 s, monitored
 * every 2 s) and retries it, instead of waiting for its 120 s expiry.
 */

let t: TestApp;
let call: Call;
const spawned: Spawned[] = [];

beforeAll(async () => {
  // The API this test calls queues tasks but runs none: the spawned processes run them.
  t = await startTestApp({ env: { WARDEN_WORKERS: "false" } });
  call = client(t.baseUrl, t.adminKey);
});

afterAll(async () => {
  for (const process of spawned) await process.stop();
  await t?.stop();
});

/** A process that serves the API and runs the task workers, over the test's database. */
async function worker(): Promise<Spawned> {
  const process = await spawnWarden(
    ["api"],
    {
      DATABASE_URL: t.database.url,
      WARDEN_API_PORT: "0",
      WARDEN_HOST: "127.0.0.1",
      WARDEN_LOG_LEVEL: "info",
      WARDEN_DATA_DIR: t.config.dataDir,
      WARDEN_ADMIN_KEY: t.adminKey,
      // The task waits on a lock the test holds: the database must not cancel the wait first.
      WARDEN_DB_LOCK_TIMEOUT_MS: "120000",
      WARDEN_DB_STATEMENT_TIMEOUT_MS: "120000",
      WARDEN_DB_QUERY_TIMEOUT_MS: "130000",
    },
    "management API listening",
  );
  spawned.push(process);
  return process;
}

/**
 * From the kill: up to 10 s until the job's heartbeat is missed, up to 2 s until a monitor pass
 * fails it, 1 to 2 s of retry delay, 0.5 s of polling: about 15 s. 40 s is a wide margin over
 * that, and far below the 122 s it took before.
 */
const recoveryDeadlineMs = 40_000;

describe("a bulk test update whose process is killed while running it", () => {
  it("is run again by a restarted process within seconds", { timeout: 90_000 }, async () => {
    const project = ((await call("POST", "/v1/projects", { body: { name: "crash", taskType: "llm-base" } })).body as { id: string }).id;
    const test = (await call("POST", `/v1/projects/${project}/tests`, {
      body: { name: "before", description: null, type: "integrity", subtype: "duplicateRowCount", thresholds: [] },
    })).body as { id: string };
    const first = await worker();

    // Hold the test's row, so that the task, once running, waits inside its transaction.
    const lock = new pg.Client({ connectionString: t.database.url });
    await lock.connect();
    try {
      await lock.query("begin");
      await lock.query("select 1 from test where id = $1 for update", [test.id]);
      const queued = await call("PUT", `/v1/projects/${project}/tests`, { body: { payloads: [{ id: test.id, name: "after" }] } });
      expect(queued.status).toBe(202);
      const { taskResultId } = queued.body as { taskResultId: string };
      const status = async () => ((await call("GET", `/v1/task-results/${taskResultId}`)).body as { status: string }).status;
      await until(async () => (await status()) === "running" && (await waitingOnLock(lock)) === 1, "the task to run and wait", setUpWaitMs);

      first.child.kill("SIGKILL");
      await once(first.child, "exit");
      await lock.query("rollback");
      await worker();
      await until(async () => (await status()) === "completed", "the task to complete", recoveryDeadlineMs);
      const list = await call("GET", `/v1/projects/${project}/tests`);
      expect((list.body as { items: { name: string }[] }).items[0]!.name).toBe("after");
    } finally {
      await lock.end();
    }
  });
});

describe("a commit whose process is killed while evaluating it", () => {
  it("is evaluated again by a restarted process, with one result per test", { timeout: 90_000 }, async () => {
    const project = ((await call("POST", "/v1/projects", { body: { name: "crash commit", taskType: "llm-base" } })).body as { id: string }).id;
    const test = (await call("POST", `/v1/projects/${project}/tests`, {
      body: { name: "rows", description: null, type: "integrity", subtype: "rowCount", thresholds: [{}], usesValidationDataset: true },
    })).body as { id: string };
    const bundle = await tarOf({ "qa/openlayer.json": JSON.stringify({ outputColumnName: "output" }), "qa/validation/dataset.csv": "output\na\nb\n" });

    // Hold test_result, so that the evaluation, its dataset measured, waits to write its results.
    const lock = new pg.Client({ connectionString: t.database.url });
    await lock.connect();
    try {
      await lock.query("begin");
      await lock.query("lock table test_result in share row exclusive mode");
      const versionId = await pushBundle(call, project, bundle);
      const commit = async () => (await call("GET", `/v1/versions/${versionId}`)).body as Record<string, unknown>;
      const first = await worker();
      await until(async () => (await commit()).status === "running" && (await waitingOnLock(lock)) === 1, "the evaluation to run and wait", setUpWaitMs);

      first.child.kill("SIGKILL");
      await once(first.child, "exit");
      await lock.query("rollback");
      await worker();
      await until(async () => (await commit()).status === "completed", "the evaluation to complete", recoveryDeadlineMs);
      expect(await commit()).toMatchObject({ passingGoalCount: 1, failingGoalCount: 0, totalGoalCount: 1 });
      const results = (await call("GET", `/v1/versions/${versionId}/results`)).body as { items: { goalId: string; status: string; statusMessage: string }[] };
      expect(results.items.map((r) => [r.goalId, r.status, r.statusMessage])).toEqual([[test.id, "passing", "rowCount = 2 (threshold > 0: holds)"]]);
    } finally {
      await lock.end();
    }
  });
});

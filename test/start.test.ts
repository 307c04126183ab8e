import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnWarden, type Spawned } from "./support/processes.ts";

/** `npm start` as a newcomer runs it: no DATABASE_URL, so the embedded PostgreSQL under the data dir. */

let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), "warden-start-"));
});
afterAll(() => rm(dataDir, { recursive: true, force: true }));

function start(): Promise<Spawned> {
  const env = { WARDEN_DATA_DIR: dataDir, WARDEN_API_PORT: "0", WARDEN_GATEWAY_PORT: "0", WARDEN_HOST: "127.0.0.1" };
  return spawnWarden([], env, "management API listening", ["DATABASE_URL", "WARDEN_ADMIN_KEY"]);
}

describe("npm start", () => {
  it("brings both halves up on the embedded PostgreSQL, prints the admin key once, and keeps data across restarts", async () => {
    const first = await start();
    const key = /\n {2}(sk-wm-\S+)\n/.exec(first.output())?.[1];
    expect(key).toBeDefined();
    expect(first.output()).toMatch(/"msg":"model gateway listening"/);
    const keyFile = path.join(dataDir, "admin-key");
    expect((await readFile(keyFile, "utf8")).trim()).toBe(key);
    expect((await stat(keyFile)).mode & 0o777).toBe(0o600);
    const created = await fetch(`http://127.0.0.1:${first.port}/v1/projects`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: JSON.stringify({ name: "survives", taskType: "llm-base" }),
    });
    expect(created.status).toBe(201);
    expect(await first.stop()).toBe(0);

    const second = await start();
    try {
      expect(second.output()).not.toContain("sk-wm-");
      const list = await fetch(`http://127.0.0.1:${second.port}/v1/projects`, { headers: { authorization: `Bearer ${key}` } });
      expect(list.status).toBe(200);
      expect(((await list.json()) as { items: { name: string }[] }).items.map((p) => p.name)).toEqual(["survives"]);
    } finally {
      expect(await second.stop()).toBe(0);
    }
    // Two starts, the first with initdb, on a machine busy with the other test files: 30 s was
    // seen to run out (about one run in six with four workers).
  }, 120_000);
});

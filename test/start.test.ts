import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fakeModel, startFakeProvider, type FakeProvider } from "./support/fake-providers.ts";
import { spawnWarden, type Spawned } from "./support/processes.ts";
import { setUpWaitMs, until } from "./support/wait.ts";

/** `npm start` as a newcomer runs it: no DATABASE_URL, so the embedded PostgreSQL under the data dir. */

let dataDir: string;
let provider: FakeProvider;
/** Every Warden started: one left running by a failed step is killed with its group afterwards. */
const started: Spawned[] = [];

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), "warden-start-"));
  provider = await startFakeProvider("openai");
});
afterAll(async () => {
  for (const warden of started) {
    if (warden.child.exitCode === null && warden.child.signalCode === null) process.kill(-warden.child.pid!, "SIGKILL");
  }
  await provider?.close();
  await rm(dataDir, { recursive: true, force: true });
});

async function start(): Promise<Spawned> {
  const env = { WARDEN_DATA_DIR: dataDir, WARDEN_API_PORT: "0", WARDEN_GATEWAY_PORT: "0", WARDEN_HOST: "127.0.0.1" };
  // Detached: in a process group of its own, as a terminal runs it, so that the test can send
  // SIGINT to the whole group as Ctrl-C does.
  const warden = await spawnWarden([], env, "management API listening", ["DATABASE_URL", "WARDEN_ADMIN_KEY"], { detached: true });
  started.push(warden);
  return warden;
}

function gatewayPort(warden: Spawned): number {
  return Number(/"port":(\d+),"msg":"model gateway listening"/.exec(warden.output())![1]);
}

function exitOf(warden: Spawned): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => warden.child.once("exit", (code, signal) => resolve({ code, signal })));
}

describe("npm start", () => {
  it("brings both halves up on the embedded PostgreSQL, prints the admin key once, keeps data across restarts, drains on Ctrl-C and recovers from a kill", async () => {
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

    // Ctrl-C in the terminal, during a stream: SIGINT reaches Warden's whole process group. The
    // embedded PostgreSQL runs in a session of its own, so it is stopped by Warden, last: the
    // stream finishes and its request-log row is written.
    const admin = (method: string, route: string, body?: unknown) =>
      fetch(`http://127.0.0.1:${first.port}${route}`, { method, headers: { authorization: `Bearer ${key}` }, body: body === undefined ? undefined : JSON.stringify(body) });
    expect((await admin("POST", "/v1/gateway/providers", { name: "openai", kind: "openai", baseUrl: provider.url, apiKey: provider.apiKey })).status).toBe(201);
    expect((await admin("POST", "/v1/gateway/routing-rules", { priority: 1, providerName: "openai" })).status).toBe(201);
    const gatewayKey = (await (await admin("POST", "/v1/gateway/keys", { name: "terminal" })).json()) as { secret: string };
    const call = (body: unknown, requestId?: string) =>
      fetch(`http://127.0.0.1:${gatewayPort(first)}/v1/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${gatewayKey.secret}`, "content-type": "application/json", ...(requestId ? { "x-request-id": requestId } : {}) },
        body: JSON.stringify(body),
      });
    // The gateway hears of the new provider and routing rule through a snapshot reload: a call
    // made before it was answered without reaching the provider, and the test waited forever.
    await until(async () => (await call({ model: "gpt-x", input: "Hi" })).status === 200, "the gateway to route to the fake provider", setUpWaitMs);
    const reached = provider.requests.length;
    const stream = call({ model: fakeModel("gpt-slow", { delayMs: 1000 }), input: "Hi", stream: true }, "ctrl-c").then(async (res) => ({
      status: res.status,
      text: await res.text(),
    }));
    await until(async () => provider.requests.length > reached, "the stream to reach the provider", setUpWaitMs);
    const firstExit = exitOf(first);
    process.kill(-first.child.pid!, "SIGINT");
    const answer = await stream;
    expect(answer.status).toBe(200);
    expect(answer.text).toContain("event: response.completed");
    expect(await firstExit).toEqual({ code: 0, signal: null });

    const second = await start();
    try {
      expect(second.output()).not.toContain("sk-wm-");
      const list = await fetch(`http://127.0.0.1:${second.port}/v1/projects`, { headers: { authorization: `Bearer ${key}` } });
      expect(list.status).toBe(200);
      expect(((await list.json()) as { items: { name: string }[] }).items.map((p) => p.name)).toEqual(["survives"]);
      const log = await fetch(`http://127.0.0.1:${second.port}/v1/gateway/request-log?requestId=ctrl-c`, { headers: { authorization: `Bearer ${key}` } });
      expect(((await log.json()) as { items: { status: number; endpoint: string }[] }).items.map(({ status, endpoint }) => ({ status, endpoint }))).toEqual([
        { status: 200, endpoint: "responses" },
      ]);
    } finally {
      // Killed outright: nothing stops its PostgreSQL, which the next start must deal with.
      const secondExit = exitOf(second);
      second.child.kill("SIGKILL");
      expect(await secondExit).toEqual({ code: null, signal: "SIGKILL" });
    }

    // The PostgreSQL left running by the killed Warden is stopped by the next start, which then
    // starts its own on the same data directory.
    const third = await start();
    try {
      expect(third.output()).toContain('"msg":"stopping the embedded PostgreSQL left running by a Warden that did not stop it"');
      const list = await fetch(`http://127.0.0.1:${third.port}/v1/projects`, { headers: { authorization: `Bearer ${key}` } });
      expect(list.status).toBe(200);
    } finally {
      expect(await third.stop()).toBe(0);
    }
    // Two starts, the first with initdb, on a machine busy with the other test files: 30 s was
    // seen to run out (about one run in six with four workers).
  }, 120_000);
});

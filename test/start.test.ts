import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** `npm start` as a newcomer runs it: no DATABASE_URL, so the embedded PostgreSQL under the data dir. */

let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), "warden-start-"));
});
afterAll(() => rm(dataDir, { recursive: true, force: true }));

interface Started {
  child: ChildProcess;
  port: number;
  stderr: () => string;
}

function start(): Promise<Started> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && name !== "DATABASE_URL" && name !== "WARDEN_ADMIN_KEY") env[name] = value;
  }
  Object.assign(env, { WARDEN_DATA_DIR: dataDir, WARDEN_API_PORT: "0", WARDEN_GATEWAY_PORT: "0", WARDEN_HOST: "127.0.0.1" });
  const child = spawn(process.execPath, ["src/main.ts"], { env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`exited with ${code}: ${stderr}${stdout}`)));
    child.stdout!.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /"port":(\d+),"msg":"management API listening"/.exec(stdout);
      if (match) resolve({ child, port: Number(match[1]), stderr: () => stderr });
    });
  });
}

function stop(started: Started): Promise<number | null> {
  return new Promise((resolve) => {
    started.child.removeAllListeners("exit");
    started.child.once("exit", (code) => resolve(code));
    started.child.kill("SIGTERM");
  });
}

describe("npm start", () => {
  it("brings the API up on the embedded PostgreSQL, prints the admin key once, and keeps data across restarts", async () => {
    const first = await start();
    // The key is printed right after the listener is up; give it a moment, boundedly.
    for (let i = 0; i < 50 && !first.stderr().includes("It is shown only now"); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const key = /\n {2}(sk-wm-\S+)\n/.exec(first.stderr())?.[1];
    expect(key).toBeDefined();
    const keyFile = path.join(dataDir, "admin-key");
    expect((await readFile(keyFile, "utf8")).trim()).toBe(key);
    expect((await stat(keyFile)).mode & 0o777).toBe(0o600);
    const created = await fetch(`http://127.0.0.1:${first.port}/v1/projects`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: JSON.stringify({ name: "survives", taskType: "llm-base" }),
    });
    expect(created.status).toBe(201);
    expect(await stop(first)).toBe(0);

    const second = await start();
    try {
      expect(second.stderr()).not.toContain("sk-wm-");
      const list = await fetch(`http://127.0.0.1:${second.port}/v1/projects`, { headers: { authorization: `Bearer ${key}` } });
      expect(list.status).toBe(200);
      expect(((await list.json()) as { items: { name: string }[] }).items.map((p) => p.name)).toEqual(["survives"]);
    } finally {
      expect(await stop(second)).toBe(0);
    }
  });
});

import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";

describe("built-in prototypes once Warden has started", () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(() => database.drop());

  it("are all in V8's fast mode, also the ones a module's subclass left in set-up mode (ioredis's String)", async () => {
    const { stdout } = await promisify(execFile)(
      path.resolve("node_modules/.bin/node"),
      ["--allow-natives-syntax", path.resolve("test/support/prototype-probe.ts"), database.url, "redis://127.0.0.1:6379", `warden-test-prototypes:${randomUUID()}:`],
      { env: process.env, timeout: 60_000 },
    );
    const { before, after } = JSON.parse(stdout.trim().split("\n").at(-1)!) as { before: string[]; after: string[] };
    // The probe's own subclass of Number (the Redis client is loaded as Warden starts).
    expect(before).toEqual(["Number"]);
    expect(after).toEqual([]);
  }, 90_000);
});

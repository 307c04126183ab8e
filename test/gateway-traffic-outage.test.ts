import Anthropic from "@anthropic-ai/sdk";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startApp, type App } from "../src/app.ts";
import { loadConfig } from "../src/platform/config.ts";
import { generateManagementKey } from "../src/workspaces/keys.ts";
import { startFakeProvider, type FakeProvider } from "./support/fake-providers.ts";
import { client, type Call } from "./support/http.ts";
import { startOwnPostgres, type OwnPostgres } from "./support/own-postgres.ts";
import { setUpWaitMs, until } from "./support/wait.ts";

/**
 * The row store unavailable (its PostgreSQL stopped) while a key bound to a pipeline is used:
 * every gateway call still succeeds, the failed writes are logged and the rows kept, they are
 * written once the database is back, and rows the gateway could not write before it stopped are
 * logged and counted as lost.
 */

interface Line {
  level: number;
  msg: string;
  [field: string]: unknown;
}

const lines: Line[] = [];
let pg: OwnPostgres;
let app: App;
let dataDir: string;
let provider: FakeProvider;
let admin: Call;
let pipelineId = "";
let secret = "";

beforeAll(async () => {
  pg = await startOwnPostgres();
  provider = await startFakeProvider("anthropic");
  dataDir = await mkdtemp(path.join(os.tmpdir(), "warden-test-"));
  const adminKey = generateManagementKey();
  const config = loadConfig({
    DATABASE_URL: pg.url,
    WARDEN_API_PORT: "0",
    WARDEN_GATEWAY_PORT: "0",
    WARDEN_HOST: "127.0.0.1",
    WARDEN_DATA_DIR: dataDir,
    WARDEN_ADMIN_KEY: adminKey,
    WARDEN_DB_CONNECT_TIMEOUT_MS: "500",
    WARDEN_DB_QUERY_TIMEOUT_MS: "1000",
    WARDEN_DB_HEARTBEAT_INTERVAL_MS: "500",
  });
  // What the gateway logs, at warn and above, for the assertions below.
  const logger = pino({ level: "warn" }, { write: (line: string) => void lines.push(JSON.parse(line) as Line) });
  app = await startApp(config, logger);
  admin = client(`http://127.0.0.1:${app.apiPort}`, adminKey);
  const post = async (path: string, body: unknown, status = 201) => {
    const res = await admin("POST", path, { body });
    if (res.status !== status) throw new Error(`${path}: ${res.status} ${res.text}`);
    return res.body as Record<string, string>;
  };
  await post("/v1/gateway/providers", { name: "anthropic", kind: "anthropic", baseUrl: provider.url, apiKey: provider.apiKey });
  await post("/v1/gateway/routing-rules", { priority: 1, providerName: "anthropic" });
  const project = await post("/v1/projects", { name: "outage", taskType: "llm-base" });
  pipelineId = (await post(`/v1/projects/${project.id}/inference-pipelines`, { name: "outage", description: "outage" }, 200)).id!;
  secret = (await post("/v1/gateway/keys", { name: "bound", inferencePipelineId: pipelineId })).secret!;
  await app.gateway!.watcher.reload();
}, 60_000);

afterAll(async () => {
  await app?.stop();
  await provider?.close();
  await pg?.destroy();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

const rows = () => app.gateway!.pipelineRows;

function call(requestId: string) {
  const anthropic = new Anthropic({ baseURL: `http://127.0.0.1:${app.gateway!.port}`, apiKey: secret, maxRetries: 0, defaultHeaders: { "x-request-id": requestId } });
  return anthropic.messages.create({ model: "claude-x", max_tokens: 5, messages: [{ role: "user", content: requestId }] });
}

describe("the row store unavailable", () => {
  it("gateway calls succeed; the failed writes are logged, the rows kept, and written once the database is back", async () => {
    expect((await call("before")).type).toBe("message");
    await rows().flush();
    expect([rows().written, rows().buffered, rows().dropped]).toEqual([1, 0, 0]);

    await pg.stopImmediately();
    const answers = await Promise.all(Array.from({ length: 5 }, (_, i) => call(`during-${i}`)));
    expect(answers.map((a) => [a.type, a.content[0]])).toEqual(Array(5).fill(["message", { type: "text", text: "Hello from anthropic", citations: null }]));
    await rows().flush();
    expect([rows().written, rows().buffered, rows().dropped]).toEqual([1, 5, 0]);
    expect(lines.filter((l) => l.msg === "pipeline rows write failed; will retry").at(-1)).toMatchObject({ buffered: 5 });

    await pg.start();
    await until(
      async () => {
        await rows().flush();
        return rows().buffered === 0;
      },
      "the rows kept during the outage to be written",
      setUpWaitMs,
      100,
    );
    expect([rows().written, rows().dropped]).toEqual([6, 0]);
    for (let i = 0; i < 5; i++) {
      const res = await admin("GET", `/v1/inference-pipelines/${pipelineId}/rows/during-${i}`);
      expect([res.status, (res.body as { row: Record<string, unknown> }).row]).toEqual([200, expect.objectContaining({ input: `during-${i}`, status: 200 })]);
    }
  });

  it("rows not written when the gateway stops are logged and counted as lost", async () => {
    await pg.stopImmediately();
    try {
      expect((await call("lost-0")).type).toBe("message");
      expect((await call("lost-1")).type).toBe("message");
      // What the gateway's stop does with its rows: one last write, and what fails is lost.
      await rows().close();
      expect([rows().written, rows().buffered, rows().dropped]).toEqual([6, 0, 2]);
      expect(lines.filter((l) => l.msg === "pipeline rows lost at shutdown: the row store did not take them")).toEqual([expect.objectContaining({ lost: 2 })]);
    } finally {
      await pg.start();
    }
  });
});

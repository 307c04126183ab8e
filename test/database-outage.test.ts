import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProjectService } from "../gen/warden/projects/v1/projects_pb.js";
import { defaultDatabaseDeadlines } from "../src/db/deadlines.ts";
import { createPool } from "../src/db/pools.ts";
import { startTestApp, type TestApp } from "./support/app.ts";
import { startFakeProvider, type FakeProvider } from "./support/fake-providers.ts";
import { createGrpcClient } from "./support/grpc-client.ts";
import { client, errorBody, type Call } from "./support/http.ts";
import { startOwnPostgres, type OwnPostgres } from "./support/own-postgres.ts";

/**
 * PostgreSQL frozen (SIGSTOP on every process of its cluster: connections open, nothing answers),
 * then stopped, under Warden with light load on both halves. Every answer comes within the
 * documented deadline with the documented status; keys the gateway knows are served from its
 * snapshot (and a key under a usage limit from the room its process holds, while it may);
 * everything recovers, without a restart of Warden, once PostgreSQL is back.
 *
 * The deadlines are made small here. The documented bound of a call that needs the database is
 * the connect timeout plus the query timeout (docs/operations.md): 1.5 s with these. Answers are
 * asserted within that plus a margin of 2 s for a loaded machine, far from the hang (as long as
 * the outage) that they replace.
 */
const deadlines = {
  WARDEN_DB_CONNECT_TIMEOUT_MS: "500",
  WARDEN_DB_STATEMENT_TIMEOUT_MS: "500",
  WARDEN_DB_LOCK_TIMEOUT_MS: "500",
  WARDEN_DB_QUERY_TIMEOUT_MS: "1000",
  WARDEN_DB_HEARTBEAT_INTERVAL_MS: "500",
  WARDEN_GATEWAY_KEY_LOOKUP_TIMEOUT_MS: "500",
  // A limited key is served from the room its process holds for at most ¾ of this after the last renewal.
  WARDEN_USAGE_LEASE_TTL_MS: "1000",
};
const boundMs = 500 + 1000 + 2000;
/** How long recovery may take once PostgreSQL answers again: reconnects retry every 500 ms. */
const recoveryMs = 15_000;

const databaseUnavailable = (what: string) => `The gateway's database is unavailable: ${what} could not be checked in time. Retry in a few seconds.`;
const apiUnavailable = errorBody("The database is unavailable. Retry in a few seconds.", "unavailable");

let pg: OwnPostgres;
let t: TestApp;
let provider: FakeProvider;
let admin: Call;
const keys = { open: "", limited: "", canary: "", canaryId: "" };
let projectCount = 0;

beforeAll(async () => {
  pg = await startOwnPostgres();
  t = await startTestApp({ database: { url: pg.url, drop: async () => undefined }, env: deadlines });
  admin = client(t.baseUrl, t.adminKey);
  provider = await startFakeProvider("anthropic");
  const post = async (path: string, body: unknown) => {
    const res = await admin("POST", path, { body });
    if (res.status !== 201) throw new Error(`${path}: ${res.status} ${res.text}`);
    return res.body as Record<string, string>;
  };
  await post("/v1/gateway/providers", { name: "anthropic", kind: "anthropic", baseUrl: provider.url, apiKey: provider.apiKey });
  await post("/v1/gateway/routing-rules", { priority: 1, providerName: "anthropic" });
  keys.open = (await post("/v1/gateway/keys", { name: "no limit" })).secret!;
  const limited = await post("/v1/gateway/keys", { name: "limited" });
  keys.limited = limited.secret!;
  // Never reached: the limit only puts the key's requests through the PostgreSQL counters.
  await post("/v1/gateway/usage-limits", { scope: "key", subjectId: limited.id, period: "daily", tokenLimit: 1_000_000_000 });
  const canary = await post("/v1/gateway/keys", { name: "canary" });
  keys.canary = canary.secret!;
  keys.canaryId = canary.id!;
  await t.app.gateway!.watcher.reload();
}, 60_000);

afterAll(async () => {
  await t?.stop();
  await provider?.close();
  await pg?.destroy();
});

interface Answer {
  status: number;
  retryAfter: string | null;
  body: unknown;
  ms: number;
}

async function timed(send: () => Promise<Response>): Promise<Answer> {
  const started = performance.now();
  const response = await send();
  const text = await response.text();
  return {
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    body: text ? JSON.parse(text) : undefined,
    ms: Math.round(performance.now() - started),
  };
}

const gateway = (key: string) =>
  timed(() =>
    fetch(`${t.gatewayUrl}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": key, "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "claude-test", max_tokens: 16, messages: [{ role: "user", content: "hi" }] }),
    }),
  );
const api = (method: string, path: string, body?: unknown) =>
  timed(() =>
    fetch(t.baseUrl + path, {
      method,
      headers: { authorization: `Bearer ${t.adminKey}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  );
const connectList = () =>
  timed(() =>
    fetch(`${t.baseUrl}/warden.projects.v1.ProjectService/ListProjects`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.adminKey}`, "content-type": "application/json" },
      body: "{}",
    }),
  );
async function grpcList(): Promise<{ code: number | undefined; details: string | undefined; ms: number }> {
  const grpc = createGrpcClient(ProjectService, `127.0.0.1:${t.app.apiPort}`, t.adminKey);
  const started = performance.now();
  try {
    await grpc.listProjects({});
    return { code: 0, details: undefined, ms: Math.round(performance.now() - started) };
  } catch (err) {
    const { code, details } = err as { code?: number; details?: string };
    return { code, details, ms: Math.round(performance.now() - started) };
  } finally {
    grpc.close();
  }
}
const newProject = () => api("POST", "/v1/projects", { name: `outage-${++projectCount}`, taskType: "llm-base" });
/** A key never issued, new each time, so that no answer comes from the gateway's cache of unknown keys. */
let unknownKeys = 0;
const unknownKey = () => `sk-gw-never-issued-${++unknownKeys}`;

/**
 * Light load on both halves while a phase runs: every 100 ms, an API read and a call on each
 * gateway key that must keep answering or fail as documented; none waits for the one before.
 */
function startLoad() {
  const answers: Promise<Answer & { what: string }>[] = [];
  // A request that fails outright (no HTTP answer) is recorded as status 0, and fails the check.
  const tag = (what: string, answer: Promise<Answer>) =>
    answer.then(
      (a) => ({ ...a, what }),
      (err: unknown) => ({ status: 0, retryAfter: null, body: String(err), ms: 0, what }),
    );
  const timer = setInterval(() => {
    answers.push(tag("api read", api("GET", "/v1/projects")), tag("gateway open", gateway(keys.open)), tag("gateway limited", gateway(keys.limited)));
  }, 100);
  return async () => {
    clearInterval(timer);
    return Promise.all(answers);
  };
}

/** Every answer of the load: in time, and either served or refused as documented, never a 500. */
function expectLoadAnswered(answers: (Answer & { what: string })[]): void {
  expect(answers.length).toBeGreaterThan(0);
  for (const answer of answers) {
    expect(answer.ms, answer.what).toBeLessThan(boundMs);
    if (answer.status === 200) continue;
    if (answer.what === "api read") expect({ status: answer.status, body: answer.body }).toEqual({ status: 503, body: apiUnavailable });
    else expect({ status: answer.status, retryAfter: answer.retryAfter, body: answer.body }).toEqual(gatewayUnavailable("the usage limits"));
  }
}

const gatewayUnavailable = (what: "the API key" | "the usage limits") =>
  ({ status: 503, retryAfter: "5", body: { type: "error", error: { type: "api_error", message: databaseUnavailable(what) } } });

/**
 * A call of the limited key once its process has stopped serving it from the room it holds (it
 * does for at most ¾ of the lease TTL after its last renewal); bounded, so one that never stops fails.
 */
async function limitedOnceHeldRoomIsGone(): Promise<Answer> {
  let answer = await gateway(keys.limited);
  for (const deadline = Date.now() + 15_000; answer.status === 200 && Date.now() < deadline; ) answer = await gateway(keys.limited);
  return answer;
}

/** What every door answers while the database is away, each within the bound. */
async function expectOutageAnswers(): Promise<void> {
  const [read, write, ready, connect, grpc, limited, open, unknown] = await Promise.all([
    api("GET", "/v1/projects"),
    newProject(),
    timed(() => fetch(`${t.baseUrl}/readyz`)),
    connectList(),
    grpcList(),
    limitedOnceHeldRoomIsGone(),
    gateway(keys.open),
    gateway(unknownKey()),
  ]);
  expect({ status: read.status, body: read.body }).toEqual({ status: 503, body: apiUnavailable });
  expect({ status: write.status, body: write.body }).toEqual({ status: 503, body: apiUnavailable });
  expect({ status: ready.status, body: ready.body }).toEqual({ status: 503, body: { status: "unavailable" } });
  expect({ status: connect.status, body: connect.body }).toEqual({ status: 503, body: { code: "unavailable", message: apiUnavailable.message } });
  // UNAVAILABLE, from Warden: grpc-js uses the same code for a connection it could not make.
  expect({ code: grpc.code, details: grpc.details }).toEqual({ code: 14, details: apiUnavailable.message });
  expect({ status: limited.status, retryAfter: limited.retryAfter, body: limited.body }).toEqual(gatewayUnavailable("the usage limits"));
  expect({ status: unknown.status, retryAfter: unknown.retryAfter, body: unknown.body }).toEqual(gatewayUnavailable("the API key"));
  expect(open.status).toBe(200);
  for (const [what, answer] of Object.entries({ read, write, ready, connect, grpc, limited, open, unknown })) {
    expect(answer.ms, what).toBeLessThan(boundMs);
  }
}

/** Polls until every door serves again, then checks a write and a configuration change over LISTEN. */
async function expectRecovery(canaryDisabled: boolean): Promise<void> {
  await expect
    .poll(
      async () => {
        const [read, ready, grpc, limited, open, unknown] = await Promise.all([
          api("GET", "/v1/projects"),
          timed(() => fetch(`${t.baseUrl}/readyz`)),
          grpcList(),
          gateway(keys.limited),
          gateway(keys.open),
          gateway(unknownKey()),
        ]);
        return [read.status, ready.status, grpc.code, limited.status, open.status, unknown.status];
      },
      { timeout: recoveryMs, interval: 200 },
    )
    .toEqual([200, 200, 0, 200, 200, 401]);
  expect((await newProject()).status).toBe(201);
  // The gateway learns of the change only through its LISTEN connection (or the reload that
  // follows a reconnection): no request of this test asks it to reload.
  expect((await api("PATCH", `/v1/gateway/keys/${keys.canaryId}`, { disabled: canaryDisabled })).status).toBe(200);
  await expect
    .poll(async () => (await gateway(keys.canary)).status, { timeout: recoveryMs, interval: 100 })
    .toBe(canaryDisabled ? 401 : 200);
  if (canaryDisabled) {
    expect((await gateway(keys.canary)).body).toEqual({ type: "error", error: { type: "authentication_error", message: "Invalid API key. This key is disabled." } });
  }
}

describe("a database outage", () => {
  it("answers within the deadlines while PostgreSQL is frozen, and recovers after", async () => {
    expect((await gateway(keys.limited)).status).toBe(200);
    expect((await gateway(keys.canary)).status).toBe(200);
    const stopLoad = startLoad();
    let load: Awaited<ReturnType<typeof stopLoad>>;
    try {
      pg.freeze();
      try {
        // Twice: first on the connections open before the freeze, then on new ones.
        await expectOutageAnswers();
        await expectOutageAnswers();
      } finally {
        pg.thaw();
      }
      await expectRecovery(true);
    } finally {
      load = await stopLoad();
    }
    expectLoadAnswered(load);
  }, 60_000);

  it("answers 503, not 500, while PostgreSQL is stopped, and recovers once it is started", async () => {
    const stopLoad = startLoad();
    let load: Awaited<ReturnType<typeof stopLoad>>;
    try {
      await pg.stopImmediately();
      await expectOutageAnswers();
      await expectOutageAnswers();
      await pg.start();
      await expectRecovery(false);
    } finally {
      load = await stopLoad();
    }
    expectLoadAnswered(load);
  }, 60_000);

  it("closes a connection whose statement got no answer in time, so that no one inherits its transaction", async () => {
    const pool = createPool({
      databaseUrl: pg.url,
      deadlines: { ...defaultDatabaseDeadlines, connectTimeoutMs: 500, statementTimeoutMs: 500, queryTimeoutMs: 1000 },
      max: 1,
    });
    try {
      const first = await pool.connect();
      const { rows: [before] } = await first.query<{ pid: number }>("select pg_backend_pid() as pid");
      await first.query("begin");
      pg.freeze();
      try {
        await expect(first.query("select 1")).rejects.toThrow("Query read timeout");
      } finally {
        pg.thaw();
      }
      // Given back without an error, as MikroORM's driver gives its connections back.
      first.release();
      const second = await pool.connect();
      const { rows: [after] } = await second.query<{ pid: number }>("select pg_backend_pid() as pid");
      second.release();
      expect(after!.pid).not.toBe(before!.pid);
    } finally {
      await pool.end();
    }
  });
});

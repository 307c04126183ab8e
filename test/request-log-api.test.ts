/**
 * GET /v1/gateway/request-log (GatewayUsageService.ListRequestLog): the request log of the
 * caller's workspace, filtered, newest first, in numbered pages. Rows are inserted as the request
 * log writes them, so that every body can be asserted exactly.
 */
import { randomUUID } from "node:crypto";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayUsageService } from "../gen/warden/gateway/v1/usage_pb.js";
import { startTestApp, type TestApp } from "./support/app.ts";
import { client, errorBody, type Call } from "./support/http.ts";
import { addWorkspace } from "./support/workspace.ts";

let t: TestApp;
let call: Call;
let theirs: Call;
let theirKey: string;
let workspace: string;
let otherWorkspace: string;

/** A row as the request log writes it; `id` is filled in on insert. */
interface Logged {
  id?: number;
  requestId: string;
  time: Date;
  workspaceId: string;
  keyId: string | null;
  userId: string | null;
  groupIds: string[];
  endpoint: string;
  model: string | null;
  provider: string | null;
  status: number;
  errorType: string | null;
  latencyMs: number;
  ttfbMs: number | null;
  inputTokens: number;
  outputTokens: number;
  tokensEstimated: boolean;
  guardrailVerdict: string | null;
  superseded: boolean;
  cachedInputTokens?: number;
  /** As the numeric column takes it. */
  costUsd?: string | null;
  redactions?: Record<string, Record<string, number>>;
}

const logged = new Map<string, Logged>();
let keyA: string;
let keyGone: string;
let theirKeyId: string;
const userU = randomUUID();
const groupG = randomUUID();
/** A whole second an hour ago: inside the default window. */
const base = new Date(Math.floor(Date.now() / 1000) * 1000 - 3_600_000);
const minutes = (n: number) => new Date(base.getTime() - n * 60_000);

async function insert(row: Omit<Logged, "id">): Promise<void> {
  const [{ id }] = await t.app.orm.em.fork().execute<{ id: string }[]>(
    `insert into gateway_request_log (request_id, time, workspace_id, key_id, user_id, group_ids, endpoint, model, provider,
       status, error_type, latency_ms, ttfb_ms, input_tokens, output_tokens, tokens_estimated, guardrail_verdict, superseded,
       cached_input_tokens, cost_usd, redactions)
     values (?, ?, ?, ?, ?, ?::uuid[], ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) returning id`,
    [
      row.requestId, row.time, row.workspaceId, row.keyId, row.userId, `{${row.groupIds.join(",")}}`, row.endpoint, row.model,
      row.provider, row.status, row.errorType, row.latencyMs, row.ttfbMs, row.inputTokens, row.outputTokens, row.tokensEstimated,
      row.guardrailVerdict, row.superseded, row.cachedInputTokens ?? 0, row.costUsd ?? null,
      row.redactions ? JSON.stringify(row.redactions) : null,
    ],
  );
  logged.set(`${row.workspaceId}/${row.requestId}`, { ...row, id: Number(id) });
}

const defaults = {
  userId: null, groupIds: [], model: null, provider: null, errorType: null, ttfbMs: null, inputTokens: 0, outputTokens: 0,
  tokensEstimated: false, guardrailVerdict: null, superseded: false,
};

/** The REST body of one entry of our workspace. */
function body(requestId: string, ws = workspace) {
  const row = logged.get(`${ws}/${requestId}`);
  if (!row) throw new Error(`no row ${requestId}`);
  const keyName = row.keyId === keyA ? "alpha" : row.keyId === theirKeyId ? "theirs" : null;
  return {
    id: row.id,
    requestId: row.requestId,
    time: row.time.toISOString(),
    workspaceId: row.workspaceId,
    keyId: row.keyId,
    keyName,
    userId: row.userId,
    groupIds: row.groupIds,
    endpoint: row.endpoint,
    model: row.model,
    provider: row.provider,
    status: row.status,
    errorType: row.errorType,
    latencyMs: row.latencyMs,
    ttfbMs: row.ttfbMs,
    inputTokens: row.inputTokens,
    outputTokens: row.outputTokens,
    tokensEstimated: row.tokensEstimated,
    guardrailVerdict: row.guardrailVerdict,
    superseded: row.superseded,
    cachedInputTokens: row.cachedInputTokens ?? 0,
    costUsd: row.costUsd == null ? null : Number(row.costUsd),
    redactions: row.redactions
      ? (["input", "output"] as const).flatMap((stage) =>
          Object.entries(row.redactions![stage] ?? {})
            .sort(([a], [b]) => a.localeCompare(b))
            .map(([entityType, count]) => ({ stage, entityType, count })),
        )
      : [],
  };
}

const bulk = Array.from({ length: 25 }, (_, i) => `bulk-${String(i).padStart(2, "0")}`);

beforeAll(async () => {
  t = await startTestApp();
  call = client(t.baseUrl, t.adminKey);
  [{ id: workspace }] = await t.app.orm.em.fork().execute<{ id: string }[]>("select id from workspace where slug = 'default'");
  const other = await addWorkspace(t.app);
  otherWorkspace = other.workspaceId;
  theirKey = other.key;
  theirs = client(t.baseUrl, theirKey);

  const created = async (as: Call, name: string) => ((await as("POST", "/v1/gateway/keys", { body: { name } })).body as { id: string }).id;
  keyA = await created(call, "alpha");
  keyGone = await created(call, "gone");
  expect((await call("DELETE", `/v1/gateway/keys/${keyGone}`)).status).toBe(200);
  theirKeyId = await created(theirs, "theirs");

  const own = { ...defaults, workspaceId: workspace };
  await insert({
    ...own, requestId: "r1", time: minutes(0), keyId: keyA, userId: userU, groupIds: [groupG], endpoint: "messages", model: "claude-x",
    provider: "anthropic", status: 200, latencyMs: 120, ttfbMs: 40, inputTokens: 10, outputTokens: 5, guardrailVerdict: "pass",
    cachedInputTokens: 4, costUsd: "0.000123456789",
    redactions: { output: { EMAIL_ADDRESS: 1 }, input: { US_SSN: 1, CREDIT_CARD: 2 } },
  });
  // r2 and r3 share a time: the later id comes first.
  await insert({ ...own, requestId: "r3", time: minutes(1), keyId: keyA, endpoint: "chat", model: "gpt-4o", provider: "azure", status: 429, errorType: "rate_limit_error", latencyMs: 30, superseded: true });
  await insert({ ...own, requestId: "r2", time: minutes(1), keyId: keyA, endpoint: "chat", model: "gpt-4o", provider: "openai", status: 200, latencyMs: 90, ttfbMs: 12, inputTokens: 7, outputTokens: 3 });
  await insert({ ...own, requestId: "r4", time: minutes(2), keyId: keyGone, userId: userU, endpoint: "responses", model: "gpt-4o", provider: "openai", status: 502, errorType: "api_error", latencyMs: 800, inputTokens: 3_000_000_000, outputTokens: 0, tokensEstimated: true });
  await insert({ ...own, requestId: "r5", time: minutes(3), keyId: null, endpoint: "messages", status: 401, errorType: "authentication_error", latencyMs: 1 });
  await insert({ ...own, requestId: "r6", time: minutes(2 * 24 * 60), keyId: keyA, endpoint: "messages", model: "claude-x", provider: "anthropic", status: 200, latencyMs: 50 });
  // Three to a second (ties, ordered by id), later with each index: newest first is the reverse.
  for (const [i, requestId] of bulk.entries()) {
    await insert({ ...own, requestId, time: new Date(minutes(10).getTime() + Math.floor(i / 3) * 1000), keyId: keyA, endpoint: "embeddings", model: "embed", provider: "openai", status: 200, latencyMs: i });
  }
  // The other workspace: the same request ID, model and status as ours.
  await insert({ ...defaults, workspaceId: otherWorkspace, requestId: "r1", time: minutes(0), keyId: theirKeyId, endpoint: "messages", model: "claude-x", provider: "anthropic", status: 200, latencyMs: 5 });
});
afterAll(() => t?.stop());

async function list(query: string, as: Call = call): Promise<{ status: number; body: unknown; next: string | null }> {
  const res = await as("GET", `/v1/gateway/request-log${query ? `?${query}` : ""}`);
  return { status: res.status, body: res.body, next: res.headers.get("x-next") };
}

/** Entries of the default window that are final attempts: everything but r3 (superseded) and r6 (two days old). */
const defaultWindow = ["r1", "r2", "r4", "r5", ...bulk.toReversed()];

describe("filters", () => {
  it("without any, the last 24 hours of final attempts, newest first, with every column", async () => {
    expect(await list("")).toEqual({ status: 200, body: { items: defaultWindow.map((r) => body(r)) }, next: null });
    expect(body("r1")).toEqual({
      id: expect.any(Number),
      requestId: "r1",
      time: base.toISOString(),
      workspaceId: workspace,
      keyId: keyA,
      keyName: "alpha",
      userId: userU,
      groupIds: [groupG],
      endpoint: "messages",
      model: "claude-x",
      provider: "anthropic",
      status: 200,
      errorType: null,
      latencyMs: 120,
      ttfbMs: 40,
      inputTokens: 10,
      outputTokens: 5,
      tokensEstimated: false,
      guardrailVerdict: "pass",
      superseded: false,
      cachedInputTokens: 4,
      costUsd: 0.000123456789,
      // Input first, then by type.
      redactions: [
        { stage: "input", entityType: "CREDIT_CARD", count: 2 },
        { stage: "input", entityType: "US_SSN", count: 1 },
        { stage: "output", entityType: "EMAIL_ADDRESS", count: 1 },
      ],
    });
    // A deleted key's entries keep its ID, without a name; a bigint token count comes whole.
    expect((await list("requestId=r4")).body).toEqual({ items: [{ ...body("r4"), keyId: keyGone, keyName: null, inputTokens: 3_000_000_000 }] });
  });

  const cases: [string, () => string, string[]][] = [
    ["keyId", () => `keyId=${keyA}`, ["r1", "r2", ...bulk.toReversed()]],
    ["keyId of a deleted key", () => `keyId=${keyGone}`, ["r4"]],
    ["userId", () => `userId=${userU}`, ["r1", "r4"]],
    ["model", () => "model=gpt-4o", ["r2", "r4"]],
    ["model, exactly", () => "model=gpt-4", []],
    ["provider", () => "provider=openai&endpoint=chat", ["r2"]],
    ["endpoint", () => "endpoint=messages", ["r1", "r5"]],
    ["status", () => "status=502", ["r4"]],
    ["errorType", () => "errorType=authentication_error", ["r5"]],
    ["superseded=true", () => "superseded=true", ["r3"]],
    ["superseded=false", () => "superseded=false&endpoint=chat", ["r2"]],
    ["requestId", () => "requestId=r1", ["r1"]],
    ["startTime and endTime", () => `startTime=${minutes(3 * 24 * 60).toISOString()}&endTime=${minutes(24 * 60).toISOString()}`, ["r6"]],
    ["startTime (inclusive) and endTime (exclusive)", () => `startTime=${minutes(2).toISOString()}&endTime=${minutes(0).toISOString()}`, ["r2", "r4"]],
    ["several, with AND", () => `keyId=${keyA}&model=gpt-4o&status=200`, ["r2"]],
  ];
  it.each(cases)("%s", async (_, query, expected) => {
    expect(await list(query())).toEqual({ status: 200, body: { items: expected.map((r) => body(r)) }, next: null });
  });
});

describe("pagination", () => {
  it("walks every page by x-next: no entry twice, none lost, in the order time desc, id desc", async () => {
    const seen: string[] = [];
    let path: string | null = `/v1/gateway/request-log?perPage=4`;
    let pages = 0;
    while (path) {
      const res = await call("GET", path);
      expect(res.status).toBe(200);
      const items = (res.body as { items: { requestId: string }[] }).items;
      expect(items.length).toBe(pages < 7 ? 4 : 1);
      seen.push(...items.map((i) => i.requestId));
      const next = res.headers.get("x-next");
      pages++;
      expect(next).toBe(pages < 8 ? `${t.baseUrl}/v1/gateway/request-log?perPage=4&page=${pages + 1}` : null);
      path = next && next.slice(t.baseUrl.length);
    }
    expect(seen).toEqual(defaultWindow);
    // The same order as the database's own sort.
    const [{ ids }] = await t.app.orm.em.fork().execute<{ ids: string[] }[]>(
      `select array_agg(request_id order by time desc, id desc) as ids from gateway_request_log
        where workspace_id = ? and not superseded and time >= now() - interval '24 hours'`,
      [workspace],
    );
    expect(seen).toEqual(ids);
  });

  it("pages keep the filters, and a page past the end is empty", async () => {
    const second = await list(`endpoint=embeddings&perPage=10&page=2`);
    expect(second).toEqual({
      status: 200,
      body: { items: bulk.toReversed().slice(10, 20).map((r) => body(r)) },
      next: `${t.baseUrl}/v1/gateway/request-log?endpoint=embeddings&perPage=10&page=3`,
    });
    expect((await list(`endpoint=embeddings&perPage=10&page=3`)).body).toEqual({ items: bulk.toReversed().slice(20).map((r) => body(r)) });
    expect(await list(`perPage=1000&page=2147483647`)).toEqual({ status: 200, body: { items: [] }, next: null });
    expect((await list(`perPage=1`)).body).toEqual({ items: [body("r1")] });
    expect((await list(`perPage=1000`)).body).toEqual({ items: defaultWindow.map((r) => body(r)) });
  });
});

describe("tenancy", () => {
  it("another workspace sees only its own entries, whatever it asks for", async () => {
    expect(await list("", theirs)).toEqual({ status: 200, body: { items: [body("r1", otherWorkspace)] }, next: null });
    expect((await list(`keyId=${keyA}`, theirs)).body).toEqual({ items: [] });
    expect((await list("requestId=r2", theirs)).body).toEqual({ items: [] });
    expect((await list("superseded=true", theirs)).body).toEqual({ items: [] });
    // And ours does not show theirs, not even by their key's ID.
    expect((await list(`keyId=${theirKeyId}`)).body).toEqual({ items: [] });
    expect((await list("requestId=r1")).body).toEqual({ items: [body("r1")] });
  });

  it("a VIEWER may read it", async () => {
    const viewer = await call("POST", `/v1/workspaces/${workspace}/api-keys`, { body: { role: "VIEWER" } });
    const asViewer = client(t.baseUrl, (viewer.body as { secureKey: string }).secureKey);
    expect((await list("requestId=r2", asViewer)).body).toEqual({ items: [body("r2")] });
  });
});

describe("bad input", () => {
  const cases: [string, string][] = [
    ["keyId=not-a-uuid", "keyId must be a UUID"],
    ["userId=42", "userId must be a UUID"],
    ["perPage=0", "perPage must be an integer from 1 to 1000"],
    ["perPage=5000", "perPage must be an integer from 1 to 1000"],
    ["perPage=1001", "perPage must be an integer from 1 to 1000"],
    ["page=0", "page must be an integer of at least 1"],
    ["status=99", "status must be an HTTP status code from 100 to 599"],
    ["status=600", "status must be an HTTP status code from 100 to 599"],
    ["status=abc", "status must be an integer"],
    ["superseded=maybe", "superseded must be true or false"],
    ["startTime=2026-01-02T00:00:00Z&endTime=2026-01-01T00:00:00Z", "startTime must be before endTime"],
    ["startTime=2026-01-01T00:00:00Z&endTime=2026-01-01T00:00:00Z", "startTime must be before endTime"],
    ["startTime=yesterday", "startTime must be an ISO-8601 date-time, such as 2024-03-22T11:31:01Z"],
    [`model=${"m".repeat(256)}`, "model must be at most 255 characters"],
    [`endpoint=${"e".repeat(17)}`, "endpoint must be at most 16 characters"],
  ];
  it.each(cases)("%s is 400", async (query, message) => {
    const res = await call("GET", `/v1/gateway/request-log?${query}`);
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: errorBody(message, "invalid_argument") });
  });
});

describe("over Connect", () => {
  function bearer(key: string): Interceptor {
    return (next) => (req) => {
      req.header.set("authorization", `Bearer ${key}`);
      return next(req);
    };
  }

  it("answers the same entries as messages, and the same 400s as errors", async () => {
    const connect = createClient(GatewayUsageService, createConnectTransport({ baseUrl: t.baseUrl, httpVersion: "1.1", interceptors: [bearer(t.adminKey)] }));
    const res = await connect.listRequestLog({ keyId: keyA, model: "gpt-4o", perPage: 1 });
    expect(res.nextPage).toBeUndefined();
    expect(res.items).toHaveLength(1);
    const [entry] = res.items;
    const row = logged.get(`${workspace}/r2`)!;
    expect({ ...entry, $typeName: undefined, time: timestampDate(entry!.time!) }).toEqual({
      $typeName: undefined,
      id: BigInt(row.id!),
      requestId: "r2",
      time: row.time,
      workspaceId: workspace,
      keyId: keyA,
      keyName: "alpha",
      groupIds: [],
      endpoint: "chat",
      model: "gpt-4o",
      provider: "openai",
      status: 200,
      latencyMs: 90,
      ttfbMs: 12,
      inputTokens: 7n,
      outputTokens: 3n,
      tokensEstimated: false,
      superseded: false,
      cachedInputTokens: 0n,
      redactions: [],
    });
    const paged = await connect.listRequestLog({ endpoint: "embeddings", perPage: 10, startTime: timestampFromDate(minutes(60)) });
    expect({ count: paged.items.length, nextPage: paged.nextPage }).toEqual({ count: 10, nextPage: 2 });
    await expect(connect.listRequestLog({ status: 99 })).rejects.toMatchObject({ rawMessage: "status must be an HTTP status code from 100 to 599", code: 3 });
  });
});

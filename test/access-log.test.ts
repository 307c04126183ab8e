import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";
import { setUpGateway, type GatewayFixture } from "./support/gateway-setup.ts";
import { until } from "./support/wait.ts";

/**
 * The access log (WARDEN_ACCESS_LOG): one info line "request" per request on each listener, read
 * from the app's own log, and the x-request-id each listener returns.
 */

type Line = Record<string, unknown>;

/** An ID the gateway makes: a UUID, or, with tracing, a 32-hex trace ID. */
const MADE_ID = /^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})$/;

/** A logger as Warden's (level info, base service), writing JSON lines into `lines`. */
function collectingLogger() {
  const lines: Line[] = [];
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      for (const text of chunk.toString().split("\n")) if (text) lines.push(JSON.parse(text) as Line);
      callback();
    },
  });
  return { lines, logger: pino({ level: "info", base: { service: "warden" } }, stream) };
}

/** The access-log lines of one request ID, without the time; waits for the first. */
async function accessLines(lines: Line[], requestId: string): Promise<Line[]> {
  const of = () => lines.filter((line) => line.msg === "request" && line.requestId === requestId);
  await until(async () => of().length > 0, `the access-log line of ${requestId}`, 5_000);
  return of().map(({ time, ...rest }) => {
    expect(typeof time).toBe("number");
    return rest;
  });
}

function gatewayCall(t: TestApp, path: string, body: unknown, headers: Record<string, string>): Promise<Response> {
  return fetch(`${t.gatewayUrl}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
}

const messages = { model: "claude-m", max_tokens: 16, messages: [{ role: "user", content: "Hi" }] };

describe("access log on (the default)", () => {
  let t: TestApp;
  let g: GatewayFixture;
  let keyId: string;
  const log = collectingLogger();

  beforeAll(async () => {
    t = await startTestApp({ logger: log.logger });
    g = await setUpGateway(t);
    const keys = (await g.admin("GET", "/v1/gateway/keys")).body as { items: { id: string; name: string }[] };
    keyId = keys.items.find((k) => k.name === "tests")!.id;
  });
  afterAll(async () => {
    await g?.close();
    await t?.stop();
  });

  it("gateway: one line per call with key, model, provider and tokens; the caller's request ID returned", async () => {
    const res = await gatewayCall(t, "/v1/messages?beta=true", messages, { authorization: `Bearer ${g.key}`, "x-request-id": "gw-call" });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-request-id")).toBe("gw-call");
    await res.text();
    // The fakes report 11 input and 7 output tokens a call.
    expect(await accessLines(log.lines, "gw-call")).toEqual([
      {
        level: 30,
        service: "warden",
        component: "gateway",
        requestId: "gw-call",
        method: "POST",
        path: "/v1/messages",
        status: 200,
        latencyMs: expect.any(Number),
        ttfbMs: expect.any(Number),
        keyId,
        model: "claude-m",
        provider: "anthropic",
        inputTokens: 11,
        outputTokens: 7,
        endpoint: "messages",
        msg: "request",
      },
    ]);
  });

  it("gateway: a refusal is one line with its error type; a request ID the gateway made is logged, not returned", async () => {
    const before = log.lines.length;
    const res = await gatewayCall(t, "/v1/messages", messages, {});
    expect(res.status).toBe(401);
    await res.text();
    // The spec: "When it is omitted, the gateway generates an ID and does not return it."
    expect(res.headers.get("x-request-id")).toBeNull();
    await until(async () => log.lines.slice(before).some((line) => line.msg === "request"), "the refusal's access-log line", 5_000);
    const requestId = log.lines.slice(before).find((line) => line.msg === "request")!.requestId as string;
    expect(requestId).toMatch(MADE_ID);
    expect(await accessLines(log.lines, requestId)).toEqual([
      {
        level: 30,
        service: "warden",
        component: "gateway",
        requestId,
        method: "POST",
        path: "/v1/messages",
        status: 401,
        latencyMs: expect.any(Number),
        ttfbMs: null,
        keyId: null,
        model: null,
        provider: null,
        inputTokens: 0,
        outputTokens: 0,
        endpoint: "messages",
        errorType: "authentication_error",
        msg: "request",
      },
    ]);
  });

  it("API: one line per request, path without its query; the caller's request ID, or a made one, returned", async () => {
    const listed = await g.admin("GET", "/v1/projects?pageSize=5", { headers: { "x-request-id": "api-call" } });
    expect(listed.status).toBe(200);
    expect(listed.headers.get("x-request-id")).toBe("api-call");
    expect(await accessLines(log.lines, "api-call")).toEqual([
      { level: 30, service: "warden", component: "api", requestId: "api-call", method: "GET", path: "/v1/projects", status: 200, latencyMs: expect.any(Number), msg: "request" },
    ]);

    const refused = await g.admin("GET", "/v1/projects", { key: null });
    expect(refused.status).toBe(401);
    const made = refused.headers.get("x-request-id");
    expect(made).toMatch(MADE_ID);
    expect(await accessLines(log.lines, made!)).toEqual([
      { level: 30, service: "warden", component: "api", requestId: made, method: "GET", path: "/v1/projects", status: 401, latencyMs: expect.any(Number), msg: "request" },
    ]);
  });

  it("probes and scrapes are not logged, on either listener, and get no request ID", async () => {
    const before = log.lines.filter((line) => line.msg === "request").length;
    for (const url of [t.baseUrl, t.gatewayUrl]) {
      for (const path of ["/healthz", "/readyz", "/metrics"]) {
        const res = await fetch(url + path);
        await res.text();
        expect(res.headers.get("x-request-id"), url + path).toBeNull();
      }
    }
    // A request after them is logged: had they been, their lines would be there by then.
    const last = await g.admin("GET", "/v1/projects", { headers: { "x-request-id": "after-probes" } });
    expect(last.status).toBe(200);
    await accessLines(log.lines, "after-probes");
    expect(log.lines.filter((line) => line.msg === "request")).toHaveLength(before + 1);
  });
});

describe("WARDEN_ACCESS_LOG=false", () => {
  let t: TestApp;
  let g: GatewayFixture;
  const log = collectingLogger();

  beforeAll(async () => {
    t = await startTestApp({ logger: log.logger, env: { WARDEN_ACCESS_LOG: "false" } });
    g = await setUpGateway(t);
  });
  afterAll(async () => {
    await g?.close();
    await t?.stop();
  });

  it("writes no access-log line on either listener, and still returns the caller's request ID", async () => {
    const call = await gatewayCall(t, "/v1/messages", messages, { authorization: `Bearer ${g.key}`, "x-request-id": "quiet-gw" });
    expect(call.status).toBe(200);
    expect(call.headers.get("x-request-id")).toBe("quiet-gw");
    await call.text();
    const refused = await gatewayCall(t, "/v1/messages", messages, {});
    expect(refused.status).toBe(401);
    expect(refused.headers.get("x-request-id")).toBeNull();
    await refused.text();
    const listed = await g.admin("GET", "/v1/projects", { headers: { "x-request-id": "quiet-api" } });
    expect(listed.status).toBe(200);
    expect(listed.headers.get("x-request-id")).toBe("quiet-api");
    // The gateway's request log has the call by the time its row is written: the line would be there too.
    await until(
      async () => (await t.app.orm.em.fork().execute<unknown[]>("select 1 from gateway_request_log where request_id = 'quiet-gw'")).length === 1,
      "the request-log row of quiet-gw",
      10_000,
    );
    expect(log.lines.filter((line) => line.msg === "request")).toEqual([]);
    // The log itself works: the listeners' start lines are there.
    expect(log.lines.map((line) => line.msg)).toContain("management API listening");
  });
});

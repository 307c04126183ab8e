import { createHash } from "node:crypto";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";
import { setUpGateway, type GatewayFixture } from "./support/gateway-setup.ts";
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "./support/otlp-receiver.ts";
import { until } from "./support/wait.ts";

/**
 * Traces (OTEL_EXPORTER_OTLP_ENDPOINT set): spans sent over OTLP/HTTP to a collector on loopback,
 * decoded there, and compared whole: names, kinds, parents, attributes, trace IDs made from
 * X-Request-ID, a caller's traceparent continued, and the traceparent the provider was sent.
 */

const SERVER = 2;
const CLIENT = 3;
const INTERNAL = 1;

let receiver: OtlpReceiver;
let t: TestApp;
let g: GatewayFixture;
let keyId: string;
let workspaceId: string;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  t = await startTestApp({
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: "20",
      OTEL_SERVICE_NAME: "warden-test",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment.name=test%20bed",
    },
  });
  g = await setUpGateway(t);
  expect((await g.admin("POST", "/v1/gateway/access-rules", { body: { effect: "block", subject: "workspace", models: ["blocked-*"] } })).status).toBe(201);
  await t.app.gateway!.watcher.reload();
  const keys = (await g.admin("GET", "/v1/gateway/keys")).body as { items: { id: string; name: string }[] };
  keyId = keys.items.find((k) => k.name === "tests")!.id;
  // Steps that do work are spans: a guardrail on each stage, and a limit on the key.
  for (const stage of ["input", "output"]) expect((await g.admin("POST", "/v1/gateway/guardrails", { body: { kind: "pii", stage } })).status).toBe(201);
  expect((await g.admin("POST", "/v1/gateway/usage-limits", { body: { scope: "key", subjectId: keyId, period: "daily", tokenLimit: 1_000_000 } })).status).toBe(201);
  await t.app.gateway!.watcher.reload();
  [{ id: workspaceId }] = await t.app.orm.em.fork().execute<{ id: string }[]>("select id from workspace where slug = 'default'");
});
afterAll(async () => {
  await g?.close();
  await t?.stop();
  await receiver?.close();
});

/** The spans of one trace, once its SERVER span (the last to end) has arrived. */
async function traceOf(traceId: string): Promise<ReceivedSpan[]> {
  const of = () => receiver.spans.filter((span) => span.traceId === traceId);
  await until(async () => of().some((span) => span.kind === SERVER), `the spans of trace ${traceId}`, 10_000);
  return of();
}

const sha256TraceId = (id: string) => createHash("sha256").update(id).digest("hex").slice(0, 32);

describe("a gateway call", () => {
  it("is a SERVER span with the GenAI attributes, its steps and the provider call as children, and the trace ID its X-Request-ID", async () => {
    const requestId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const anthropic = new Anthropic({ baseURL: t.gatewayUrl, apiKey: g.key, maxRetries: 0, defaultHeaders: { "x-request-id": requestId } });
    const message = await anthropic.messages.create({ model: "claude-traced", max_tokens: 16, messages: [{ role: "user", content: "Hi" }] });
    expect(message.type).toBe("message");

    const spans = await traceOf(requestId);
    const server = spans.find((span) => span.kind === SERVER)!;
    // Sampled (0x01), its parent's remoteness known (0x100): it has none.
    expect(server).toMatchObject({ name: "chat claude-traced", parentSpanId: "", status: { code: 0, message: "" }, links: [], flags: 0x101 });
    expect(server.attributes).toEqual({
      "http.request.method": "POST",
      "warden.request_id": requestId,
      "http.response.status_code": 200,
      "url.path": "/v1/messages",
      "warden.endpoint": "messages",
      "gen_ai.operation.name": "chat",
      "gen_ai.request.model": "claude-traced",
      "gen_ai.provider.name": "anthropic",
      "warden.provider": "anthropic",
      "gen_ai.request.max_tokens": 16,
      "gen_ai.usage.input_tokens": 11,
      "gen_ai.usage.output_tokens": 7,
      "warden.stream": false,
      "warden.key_id": keyId,
      "warden.workspace_id": workspaceId,
      "warden.guardrail_verdict": "pii:pass,pii:pass",
    });
    expect(server.resource).toMatchObject({ "service.name": "warden-test", "deployment.environment.name": "test bed" });

    const children = spans.filter((span) => span !== server);
    expect(children.every((span) => span.parentSpanId === server.spanId)).toBe(true);
    expect(children.map((span) => [span.name, span.kind]).sort()).toEqual(
      [
        ["chat claude-traced", CLIENT],
        ["input guardrails", INTERNAL],
        ["output guardrails", INTERNAL],
        ["reserve usage", INTERNAL],
      ].sort(),
    );
    const client = children.find((span) => span.kind === CLIENT)!;
    expect(client.attributes).toEqual({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "anthropic",
      "gen_ai.request.model": "claude-traced",
      "warden.provider": "anthropic",
      "server.address": "127.0.0.1",
      "http.response.status_code": 200,
    });
    // Each step lies within the request.
    for (const child of children) {
      expect(child.startNanos >= server.startNanos && child.endNanos <= server.endNanos, child.name).toBe(true);
    }
    // The provider was told the call's trace, with the provider call as the parent.
    expect(g.anthropic.requests.at(-1)!.headers.traceparent).toBe(`00-${requestId}-${client.spanId}-01`);
  });

  it("maps any other X-Request-ID to a trace ID (the first half of its SHA-256) and keeps it as an attribute", async () => {
    const requestId = "order-42";
    const openai = new OpenAI({ baseURL: `${t.gatewayUrl}/v1`, apiKey: g.key, maxRetries: 0, defaultHeaders: { "x-request-id": requestId } });
    await openai.responses.create({ model: "gpt-traced", input: "Hi", stream: false });
    const traceId = sha256TraceId(requestId);
    const server = (await traceOf(traceId)).find((span) => span.kind === SERVER)!;
    expect(server.name).toBe("chat gpt-traced");
    expect(server.attributes["warden.request_id"]).toBe(requestId);
    expect(server.attributes["gen_ai.provider.name"]).toBe("openai");
    expect(g.openai.requests.at(-1)!.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
  });

  it("continues the caller's traceparent when it sends no X-Request-ID, whose trace ID is then the request ID (not returned)", async () => {
    const traceId = "0af7651916cd43dd8448eb211c80319c";
    const res = await fetch(`${t.gatewayUrl}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": g.key, "content-type": "application/json", traceparent: `00-${traceId}-b7ad6b7169203331-01`, tracestate: "vendor=x" },
      body: JSON.stringify({ model: "claude-parented", max_tokens: 8, messages: [{ role: "user", content: "Hi" }] }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-request-id")).toBeNull();
    await res.arrayBuffer();
    const spans = await traceOf(traceId);
    const server = spans.find((span) => span.kind === SERVER)!;
    expect(server.parentSpanId).toBe("b7ad6b7169203331");
    // Its parent is the caller's, remote (0x200); the provider call's is the request's, local.
    expect(server.flags).toBe(0x301);
    expect(server.traceState).toBe("vendor=x");
    expect(server.attributes["warden.request_id"]).toBe(traceId);
    const client = spans.find((span) => span.kind === CLIENT)!;
    expect(client.flags).toBe(0x101);
    expect(g.anthropic.requests.at(-1)!.headers).toMatchObject({ traceparent: `00-${traceId}-${client.spanId}-01`, tracestate: "vendor=x" });
  });

  it("follows a caller that did not sample its trace: no span of it exported, the provider told the trace and its state, not sampled", async () => {
    const traceId = "5e1f0c2d3b4a59687766554433221100";
    const callerSpan = "c0ffee00c0ffee00";
    const res = await fetch(`${t.gatewayUrl}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": g.key, "content-type": "application/json", traceparent: `00-${traceId}-${callerSpan}-00`, tracestate: "vendor=y" },
      body: JSON.stringify({ model: "claude-unsampled", max_tokens: 8, messages: [{ role: "user", content: "Hi" }] }),
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const sent = g.anthropic.requests.at(-1)!.headers;
    expect(sent.tracestate).toBe("vendor=y");
    const traceparent = /^00-([0-9a-f]{32})-([0-9a-f]{16})-00$/.exec(String(sent.traceparent));
    expect(traceparent?.[1]).toBe(traceId);
    // The gateway's own span ID, not the caller's: the provider call is a child of the request.
    expect(traceparent?.[2]).not.toBe(callerSpan);
    // A sampled request sent after it is exported: had this one made spans, they would be there by then.
    const later = "6e1f0c2d3b4a59687766554433221100";
    const after = await fetch(`${t.gatewayUrl}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": g.key, "content-type": "application/json", "x-request-id": later },
      body: JSON.stringify({ model: "claude-unsampled", max_tokens: 8, messages: [{ role: "user", content: "Hi" }] }),
    });
    await after.arrayBuffer();
    await traceOf(later);
    expect(receiver.spans.filter((span) => span.traceId === traceId)).toEqual([]);
  });

  it("with an X-Request-ID of another trace than its traceparent, follows X-Request-ID and links the caller's span", async () => {
    const requestId = "11111111111111111111111111111111";
    const res = await fetch(`${t.gatewayUrl}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": g.key, "content-type": "application/json", "x-request-id": requestId, traceparent: "00-22222222222222222222222222222222-3333333333333333-01" },
      body: JSON.stringify({ model: "claude-linked", max_tokens: 8, messages: [{ role: "user", content: "Hi" }] }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-request-id")).toBe(requestId);
    await res.arrayBuffer();
    const server = (await traceOf(requestId)).find((span) => span.kind === SERVER)!;
    expect(server.parentSpanId).toBe("");
    expect(server.links).toEqual([{ traceId: "22222222222222222222222222222222", spanId: "3333333333333333" }]);
  });

  it("refused: the span says why, has no provider call, and no error status (the caller's 4xx)", async () => {
    const requestId = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const res = await fetch(`${t.gatewayUrl}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": g.key, "content-type": "application/json", "x-request-id": requestId },
      body: JSON.stringify({ model: "blocked-model", max_tokens: 8, messages: [{ role: "user", content: "Hi" }] }),
    });
    expect(res.status).toBe(403);
    await res.arrayBuffer();
    const spans = await traceOf(requestId);
    // Refused at model access: no step after it ran, and no provider was called.
    expect(spans.map((span) => span.name)).toEqual(["chat blocked-model"]);
    const server = spans.find((span) => span.kind === SERVER)!;
    expect(server.status.code).toBe(0);
    expect(server.attributes).toMatchObject({ "http.response.status_code": 403, "error.type": "permission_error", "warden.refusal": "access" });
  });
});

describe("a management-API call", () => {
  it("is one SERVER span per RPC, over REST and over Connect, with the RPC attributes and its error code", async () => {
    const rest = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
    expect((await g.admin("GET", "/v1/projects", { headers: { "x-request-id": rest } })).status).toBe(200);
    const [listed] = await traceOf(rest);
    expect(listed).toMatchObject({
      name: "warden.projects.v1.ProjectService/ListProjects",
      kind: SERVER,
      status: { code: 0 },
      attributes: { "rpc.system": "connect_rpc", "rpc.service": "warden.projects.v1.ProjectService", "rpc.method": "ListProjects", "warden.request_id": rest },
    });
    expect(receiver.spans.filter((span) => span.traceId === rest)).toHaveLength(1);

    const connect = "cccccccccccccccccccccccccccccccc";
    const res = await fetch(`${t.baseUrl}/warden.projects.v1.ProjectService/DeleteProject`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.adminKey}`, "content-type": "application/json", "x-request-id": connect },
      body: JSON.stringify({ projectId: "00000000-0000-4000-8000-000000000000" }),
    });
    expect(res.status).toBe(404);
    const [failed] = await traceOf(connect);
    expect(failed).toMatchObject({
      name: "warden.projects.v1.ProjectService/DeleteProject",
      status: { code: 2 },
      attributes: { "rpc.method": "DeleteProject", "rpc.connect_rpc.error_code": "not_found", "error.type": "not_found" },
    });
  });
});

describe("the trace queue", () => {
  it("is on /metrics: every span sent is counted, and none waits", async () => {
    await until(
      async () => {
        const text = await (await fetch(`${t.baseUrl}/metrics`)).text();
        return text.includes(`warden_trace_spans_exported_total ${receiver.spans.length}\n`) && text.includes("warden_trace_queue_spans 0\n");
      },
      "the trace metrics to match what the collector received",
      10_000,
    );
    const text = await (await fetch(`${t.gatewayUrl}/metrics`)).text();
    expect(text).toContain("warden_trace_spans_dropped_total 0\n");
    expect(text).toContain("warden_trace_spans_export_failed_total 0\n");
  });
});

import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";
import { fakeModel } from "./support/fake-providers.ts";
import { setUpGateway, type GatewayFixture } from "./support/gateway-setup.ts";

/**
 * The gateway's metrics, read from /metrics on both listeners after known traffic. Each test app
 * has a registry of its own, so the counts are exactly this file's requests.
 */

let t: TestApp;
let g: GatewayFixture;

beforeAll(async () => {
  t = await startTestApp();
  g = await setUpGateway(t);
  const blocked = await g.admin("POST", "/v1/gateway/access-rules", { body: { effect: "block", subject: "workspace", models: ["blocked-*"] } });
  expect(blocked.status, blocked.text).toBe(201);
  await t.app.gateway!.watcher.reload();
});
afterAll(async () => {
  await g?.close();
  await t?.stop();
});

/** Samples by name and labels (sorted), whatever order the exposition writes them in. */
async function scrape(url: string): Promise<Map<string, number>> {
  const res = await fetch(`${url}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
  const samples = new Map<string, number>();
  for (const line of (await res.text()).split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample: ${line}`);
    const labels = [...(match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map(([, name, value]) => `${name}=${value}`).sort();
    samples.set(`${match[1]}{${labels.join(",")}}`, Number(match[3]));
  }
  return samples;
}

function call(path: string, body: unknown, key: string | null = g.key): Promise<Response> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (key !== null) headers.authorization = `Bearer ${key}`;
  return fetch(`${t.gatewayUrl}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
}

describe("metrics on both listeners", () => {
  it("count known traffic exactly: requests, refusals, upstream errors, tokens, durations", async () => {
    const messages = (model: string) => ({ model, max_tokens: 16, messages: [{ role: "user", content: "Hi" }] });
    for (let i = 0; i < 2; i++) {
      const res = await call("/v1/messages", messages("claude-m"));
      expect(res.status).toBe(200);
      // Server-Timing is off unless WARDEN_GATEWAY_SERVER_TIMING says otherwise.
      expect(res.headers.get("server-timing")).toBeNull();
      await res.arrayBuffer();
    }
    const openai = new OpenAI({ baseURL: `${t.gatewayUrl}/v1`, apiKey: g.key, maxRetries: 0 });
    const stream = await openai.responses.create({ model: "gpt-m", input: "Hi", stream: true });
    for await (const event of stream) void event;
    expect((await call("/v1/messages", messages("blocked-x"))).status).toBe(403);
    const failing = fakeModel("gpt-fail", { status: 500 });
    expect((await call("/v1/responses", { model: failing, input: "Hi" })).status).toBe(502);
    expect((await call("/v1/messages", messages("claude-m"), null)).status).toBe(401);

    const gateway = await scrape(t.gatewayUrl);
    const expected: Record<string, number> = {
      "warden_gateway_requests_total{endpoint=messages,model=claude-m,provider=anthropic,status=200}": 2,
      "warden_gateway_requests_total{endpoint=responses,model=gpt-m,provider=openai,status=200}": 1,
      "warden_gateway_requests_total{endpoint=messages,model=blocked-x,provider=,status=403}": 1,
      [`warden_gateway_requests_total{endpoint=responses,model=${failing},provider=openai,status=502}`]: 1,
      "warden_gateway_requests_total{endpoint=messages,model=,provider=,status=401}": 1,
      "warden_gateway_refusals_total{reason=access}": 1,
      "warden_gateway_refusals_total{reason=key}": 1,
      "warden_gateway_upstream_errors_total{provider=openai,type=status_5xx}": 1,
      "warden_gateway_requests_in_flight{}": 0,
      // The fakes report 11 input and 7 output tokens a call.
      "gen_ai_client_token_usage_count{gen_ai_operation_name=chat,gen_ai_provider_name=anthropic,gen_ai_request_model=claude-m,gen_ai_token_type=input}": 2,
      "gen_ai_client_token_usage_sum{gen_ai_operation_name=chat,gen_ai_provider_name=anthropic,gen_ai_request_model=claude-m,gen_ai_token_type=input}": 22,
      "gen_ai_client_token_usage_sum{gen_ai_operation_name=chat,gen_ai_provider_name=anthropic,gen_ai_request_model=claude-m,gen_ai_token_type=output}": 14,
      "gen_ai_client_token_usage_sum{gen_ai_operation_name=chat,gen_ai_provider_name=openai,gen_ai_request_model=gpt-m,gen_ai_token_type=output}": 7,
      // 16 tokens fall in the bucket of 16, 7 in the bucket of 16 but not of 4.
      "gen_ai_client_token_usage_bucket{gen_ai_operation_name=chat,gen_ai_provider_name=anthropic,gen_ai_request_model=claude-m,gen_ai_token_type=output,le=4}": 0,
      "gen_ai_client_token_usage_bucket{gen_ai_operation_name=chat,gen_ai_provider_name=anthropic,gen_ai_request_model=claude-m,gen_ai_token_type=output,le=16}": 2,
      "gen_ai_server_request_duration_seconds_count{error_type=,gen_ai_operation_name=chat,gen_ai_provider_name=anthropic,gen_ai_request_model=claude-m}": 2,
      [`gen_ai_server_request_duration_seconds_count{error_type=api_error,gen_ai_operation_name=chat,gen_ai_provider_name=openai,gen_ai_request_model=${failing}}`]: 1,
      "gen_ai_server_time_to_first_token_seconds_count{gen_ai_operation_name=chat,gen_ai_provider_name=openai,gen_ai_request_model=gpt-m}": 1,
      // Four calls reached a provider; the refusals never did.
      "warden_gateway_overhead_seconds_count{endpoint=messages}": 2,
      "warden_gateway_overhead_seconds_count{endpoint=responses}": 2,
    };
    const seen = Object.fromEntries(Object.keys(expected).map((key) => [key, gateway.get(key)]));
    expect(seen).toEqual(expected);
    // Nothing else was counted as a request.
    const requests = [...gateway.entries()].filter(([key]) => key.startsWith("warden_gateway_requests_total{"));
    expect(requests.reduce((sum, [, n]) => sum + n, 0)).toBe(6);
    expect(gateway.has("warden_gateway_request_log_buffered{}")).toBe(true);

    // The management API's listener serves the same registry, with the process's own metrics.
    const api = await scrape(t.baseUrl);
    expect(api.get("warden_gateway_requests_total{endpoint=messages,model=claude-m,provider=anthropic,status=200}")).toBe(2);
    expect(api.has("process_cpu_user_seconds_total{}")).toBe(true);
  });
});

describe("WARDEN_GATEWAY_METRICS=false", () => {
  it("records no gateway request; /metrics still serves the process's own metrics", async () => {
    const off = await startTestApp({ env: { WARDEN_GATEWAY_METRICS: "false" } });
    const fixture = await setUpGateway(off);
    try {
      const res = await fetch(`${off.gatewayUrl}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": fixture.key, "content-type": "application/json" },
        body: JSON.stringify({ model: "claude-m", max_tokens: 8, messages: [{ role: "user", content: "Hi" }] }),
      });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      const metrics = await scrape(off.gatewayUrl);
      expect([...metrics.keys()].filter((key) => key.startsWith("warden_gateway_") || key.startsWith("gen_ai_"))).toEqual([]);
      expect(metrics.has("process_cpu_user_seconds_total{}")).toBe(true);
    } finally {
      await fixture.close();
      await off.stop();
    }
  });
});

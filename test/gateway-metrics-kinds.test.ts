import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { GatewayMetrics, type RequestMeasure } from "../src/gateway/usage/metrics.ts";

/**
 * GatewayMetrics counts each request into its kind's series, remembering the last kind: requests
 * that differ from the one before in any one of endpoint, provider, model, status or error type
 * must still land in their own series, and the bound on model names must hold through it.
 */

/** A request of the kind under test: its measure and its status (200 unless given). */
type Request = Partial<RequestMeasure> & { status?: number };

function end(metrics: GatewayMetrics, { status = 200, ...overrides }: Request): void {
  metrics.ended({ endpoint: "messages", provider: "anthropic", model: "claude-m", ttfbMs: 2, overheadMs: 0.1, ...overrides }, status, 5, undefined);
}

async function requestCounts(registry: Registry): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const line of (await registry.metrics()).split("\n")) {
    const match = /^warden_gateway_requests_total\{(.*)\} (\S+)$/.exec(line);
    if (match) counts[match[1]!] = Number(match[2]);
  }
  return counts;
}

describe("GatewayMetrics' kinds of request", () => {
  it("counts each request under its own labels, whichever value changed from the request before", async () => {
    const registry = new Registry();
    const metrics = new GatewayMetrics(registry, { requestLog: () => 0, pipelineRows: () => 0 });
    const sequence: Request[] = [
      {},
      {},
      { status: 429, errorType: "rate_limit_error" },
      { status: 429, errorType: "overloaded_error" },
      {},
      { endpoint: "chat" },
      { provider: "other-anthropic" },
      { model: "claude-n" },
      { model: undefined, provider: undefined, status: 401, errorType: "authentication_error" },
      {},
    ];
    for (const overrides of sequence) {
      metrics.started();
      end(metrics, overrides);
    }
    expect(await requestCounts(registry)).toEqual({
      'endpoint="messages",provider="anthropic",model="claude-m",status="200"': 4,
      'endpoint="messages",provider="anthropic",model="claude-m",status="429"': 2,
      'endpoint="chat",provider="anthropic",model="claude-m",status="200"': 1,
      'endpoint="messages",provider="other-anthropic",model="claude-m",status="200"': 1,
      'endpoint="messages",provider="anthropic",model="claude-n",status="200"': 1,
      'endpoint="messages",provider="",model="",status="401"': 1,
    });
    const exposition = await registry.metrics();
    expect(exposition).toContain('gen_ai_server_request_duration_seconds_count{gen_ai_operation_name="chat",gen_ai_provider_name="anthropic",gen_ai_request_model="claude-m",error_type="rate_limit_error"} 1');
    expect(exposition).toContain('gen_ai_server_request_duration_seconds_count{gen_ai_operation_name="chat",gen_ai_provider_name="anthropic",gen_ai_request_model="claude-m",error_type="overloaded_error"} 1');
  });

  it("counts models past the first 200 as other, the same model twice in a row included", async () => {
    const registry = new Registry();
    const metrics = new GatewayMetrics(registry, { requestLog: () => 0, pipelineRows: () => 0 });
    for (let i = 0; i < 200; i++) end(metrics, { model: `m${i}` });
    for (const model of ["late", "late", "m0", "later"]) end(metrics, { model });
    const counts = await requestCounts(registry);
    expect(counts['endpoint="messages",provider="anthropic",model="other",status="200"']).toBe(3);
    expect(counts['endpoint="messages",provider="anthropic",model="m0",status="200"']).toBe(2);
    expect(Object.keys(counts)).toHaveLength(201);
  });
});

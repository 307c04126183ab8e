import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { AccessMembers, type AccessFacts } from "../src/gateway/dataplane/access-line.ts";

/**
 * AccessMembers keeps the members that repeat from one request to the next as one text: a request
 * that differs from the one before in any one of them (method, path, key, model, provider,
 * endpoint, error type) must still get its own values, and one that repeats the last must not
 * carry anything of the requests before.
 */

interface Case extends AccessFacts {
  method: string;
  url: string;
  status: number;
}

const base: Case = {
  method: "POST",
  url: "/v1/messages",
  status: 200,
  requestId: "r",
  endpoint: "messages",
  key: { id: "key-1" },
  model: "claude-m",
  provider: "anthropic",
  ttfbMs: 3,
  usage: { inputTokens: 11, outputTokens: 7 },
};

/** The line's members as JSON.stringify writes them, in the order AccessMembers writes them. */
function expected(c: Case, latencyMs: number): Record<string, unknown> {
  const path = c.url.split("?")[0];
  return {
    requestId: c.requestId,
    status: c.status,
    latencyMs,
    ttfbMs: c.ttfbMs ?? null,
    inputTokens: c.usage?.inputTokens ?? 0,
    outputTokens: c.usage?.outputTokens ?? 0,
    method: c.method,
    path,
    keyId: c.key?.id ?? null,
    model: c.model ?? null,
    provider: c.provider ?? null,
    endpoint: c.endpoint,
    ...(c.errorType ? { errorType: c.errorType } : {}),
  };
}

describe("AccessMembers", () => {
  it("writes each request's own values, whichever of the repeated ones changed from the request before", () => {
    const members = new AccessMembers();
    // Each change is the base with its overrides, and the base again after it: each differs
    // from the request before it in its overrides alone.
    const changes: Partial<Case>[] = [
      { method: "GET", url: "/v1/models", endpoint: "models", model: undefined, provider: undefined, usage: undefined, ttfbMs: undefined },
      { url: "/v1/messages?beta=true" },
      { url: "/anthropic/v1/messages" },
      { method: "PUT" },
      { endpoint: "responses" },
      { key: { id: "key-2" } },
      { key: undefined, status: 401, errorType: "authentication_error", model: undefined, provider: undefined, usage: undefined },
      { model: "claude-\u00e9" },
      { provider: "other-anthropic" },
      { model: 'quote"d' },
      { errorType: "overloaded_error" },
    ];
    const sequence: Partial<Case>[] = [{}, ...changes.flatMap((change) => [change, {}]), { status: 429, errorType: "rate_limit_error" }, { status: 429, errorType: "overloaded_error" }];
    sequence.forEach((overrides, i) => {
      const c: Case = { ...base, requestId: `r-${i}`, ...overrides };
      const req = { method: c.method, url: c.url } as IncomingMessage;
      const text = members.line(req, c.status, 40 + i, c, true);
      expect(JSON.stringify(JSON.parse(`{${text}}`)), `request ${i}`).toBe(JSON.stringify(expected(c, 40 + i)));
      // ASCII throughout (AccessLineWriter copies lines as Latin-1): "é" is escaped.
      expect(/^[\x20-\x7e]*$/.test(text)).toBe(true);
    });
  });

  it("tests a caller's request ID for characters to escape, and writes the gateway's own as it is", () => {
    const members = new AccessMembers();
    const req = { method: "POST", url: "/v1/messages" } as IncomingMessage;
    const theirs = members.line(req, 200, 1, { ...base, requestId: 'id"\u00e9' }, false);
    expect(theirs.startsWith(String.raw`"requestId":"id\"\u00e9",`)).toBe(true);
    const ours = members.line(req, 200, 1, { ...base, requestId: "0af7651916cd43dd8448eb211c80319c" }, true);
    expect(ours.startsWith(`"requestId":"0af7651916cd43dd8448eb211c80319c","status":200,`)).toBe(true);
  });
});

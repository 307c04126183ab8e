import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/platform/config.ts";

/** Settings that would break a bound are refused at start, with the variable named. */
describe("the settings of deadlines, caps and timeouts", () => {
  it("has the documented defaults", () => {
    const config = loadConfig({});
    expect(config.databaseDeadlines).toEqual({
      connectTimeoutMs: 2000,
      statementTimeoutMs: 5000,
      lockTimeoutMs: 3000,
      idleInTransactionTimeoutMs: 10000,
      queryTimeoutMs: 6000,
      heartbeatIntervalMs: 5000,
    });
    expect(config.databaseMigrationTimeoutMs).toBe(600_000);
    expect(config.httpTimeouts).toEqual({ headersTimeoutMs: 60_000, requestTimeoutMs: 300_000, idleTimeoutMs: 65_000 });
    expect(config.usageLeaseTtlMs).toBe(10_000);
    expect(config.guardrailLimits.maxTextBytes).toBe(1024 * 1024);
    expect(config.guardrailLimits.queueLimit).toBe(64);
    expect(config.guardrailLimits.timeoutMs).toBe(10_000);
  });

  it.each([
    [{ WARDEN_USAGE_LEASE_TTL_MS: "999" }, "WARDEN_USAGE_LEASE_TTL_MS must be at least 1000, got 999"],
    [{ WARDEN_GUARDRAIL_MAX_TEXT_BYTES: "1023" }, "WARDEN_GUARDRAIL_MAX_TEXT_BYTES must be between 1024 and 2097152, got 1023"],
    [{ WARDEN_GUARDRAIL_MAX_TEXT_BYTES: "2097153" }, "WARDEN_GUARDRAIL_MAX_TEXT_BYTES must be between 1024 and 2097152, got 2097153"],
    [{ WARDEN_HTTP_HEADERS_TIMEOUT_MS: "20", WARDEN_HTTP_REQUEST_TIMEOUT_MS: "10" }, "WARDEN_HTTP_HEADERS_TIMEOUT_MS must not be more than WARDEN_HTTP_REQUEST_TIMEOUT_MS"],
    [{ WARDEN_DB_QUERY_TIMEOUT_MS: "soon" }, 'WARDEN_DB_QUERY_TIMEOUT_MS must be a non-negative integer, got "soon"'],
    [{ WARDEN_SQL_QUERY_TIMEOUT_MS: "0" }, "WARDEN_SQL_QUERY_TIMEOUT_MS must be at least 1, got 0"],
    [{ WARDEN_DATA_LOAD_MAX_ROWS: "0" }, "WARDEN_DATA_LOAD_MAX_ROWS must be at least 1, got 0"],
    [{ WARDEN_JUDGE_GATEWAY_URL: "not a url" }, 'WARDEN_JUDGE_GATEWAY_URL must be a URL, got "not a url"'],
    [{ WARDEN_PUBLIC_URL: "ftp://warden.example" }, 'WARDEN_PUBLIC_URL must be an http or https URL without query or fragment, got "ftp://warden.example"'],
  ])("refuses %j", (env, message) => {
    expect(() => loadConfig(env)).toThrow(new ConfigError([message]));
  });
});

import { afterEach, describe, expect, it } from "vitest";
import type { ProviderConfig } from "../src/gateway/config/types.ts";
import { UpstreamRegistry } from "../src/gateway/dataplane/upstreams.ts";

/**
 * The registry keeps one Upstream (its connections, its in-flight count) per provider across
 * reloads while the provider's connection settings stay the same, and remembers what each
 * snapshot's provider object was given, so that a call does not fingerprint the settings again.
 */
function provider(overrides: Partial<ProviderConfig> = {}): ProviderConfig {
  return {
    id: "p1",
    workspaceId: "w1",
    name: "main",
    kind: "openai",
    baseUrl: "http://127.0.0.1:9",
    apiKey: "sk-test",
    connectTimeoutMs: 1_000,
    headersTimeoutMs: 1_000,
    bodyTimeoutMs: 1_000,
    maxInFlight: 8,
    apiVersion: null,
    ...overrides,
  };
}

describe("UpstreamRegistry", () => {
  let registry: UpstreamRegistry;
  afterEach(() => registry.close());

  it("gives a provider the same Upstream call after call, and across a reload that keeps its settings", () => {
    registry = new UpstreamRegistry();
    const first = provider();
    const upstream = registry.for(first);
    expect(registry.for(first)).toBe(upstream);
    // A reload: a new object with the same settings (the name is no connection setting).
    expect(registry.for(provider({ name: "renamed" }))).toBe(upstream);
    expect(registry.for(first)).toBe(upstream);
  });

  it("gives a changed provider a new Upstream, and never hands the replaced one out again", () => {
    registry = new UpstreamRegistry();
    const before = provider();
    const old = registry.for(before);
    for (const change of [{ baseUrl: "http://127.0.0.1:10" }, { apiKey: "sk-rotated" }, { maxInFlight: 9 }, { headersTimeoutMs: 2_000 }]) {
      const changed = provider(change);
      const replacement = registry.for(changed);
      expect(replacement, JSON.stringify(change)).not.toBe(old);
      expect(registry.for(changed)).toBe(replacement);
      // An older snapshot's object, still in use by a call in flight, does not get the closed one back.
      expect(registry.for(before)).not.toBe(old);
    }
    expect(registry.for(provider({ id: "p2" }))).not.toBe(registry.for(provider()));
  });
});

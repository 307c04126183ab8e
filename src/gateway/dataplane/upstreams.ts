import type { ProviderConfig } from "../config/types.ts";
import { Upstream } from "../providers/upstream.ts";

/**
 * One Upstream (pool and in-flight counter) per provider, kept across configuration reloads
 * while the provider's connection settings stay the same, so that a reload neither drops
 * connections nor forgets what is in flight. A changed provider gets a new Upstream; the old one
 * closes once its calls are done.
 */
export class UpstreamRegistry {
  readonly #entries = new Map<string, { fingerprint: string; upstream: Upstream }>();

  for(provider: ProviderConfig): Upstream {
    const fingerprint = fingerprintOf(provider);
    const entry = this.#entries.get(provider.id);
    if (entry?.fingerprint === fingerprint) return entry.upstream;
    if (entry) void entry.upstream.close();
    const upstream = new Upstream(provider);
    this.#entries.set(provider.id, { fingerprint, upstream });
    return upstream;
  }

  async close(): Promise<void> {
    await Promise.all([...this.#entries.values()].map((entry) => entry.upstream.close()));
    this.#entries.clear();
  }
}

function fingerprintOf(provider: ProviderConfig): string {
  return JSON.stringify([
    provider.kind,
    provider.baseUrl,
    provider.apiKey,
    provider.connectTimeoutMs,
    provider.headersTimeoutMs,
    provider.bodyTimeoutMs,
    provider.maxInFlight,
    provider.apiVersion,
  ]);
}

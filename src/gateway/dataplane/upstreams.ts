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
  /**
   * What each provider object of a snapshot was last given, while its entry stands: a snapshot's
   * objects do not change, so its calls need no fingerprint (a JSON text of eight settings, made
   * for every call, 1 % of a plain call's instructions). A reload brings new objects, which are
   * fingerprinted once.
   */
  readonly #given = new WeakMap<ProviderConfig, Upstream>();

  for(provider: ProviderConfig): Upstream {
    const given = this.#given.get(provider);
    if (given !== undefined && this.#entries.get(provider.id)?.upstream === given) return given;
    const upstream = this.#upstreamOf(provider);
    this.#given.set(provider, upstream);
    return upstream;
  }

  #upstreamOf(provider: ProviderConfig): Upstream {
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

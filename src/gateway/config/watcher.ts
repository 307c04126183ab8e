import pg from "pg";
import type { Logger } from "../../platform/logger.ts";
import type { GatewayKey, GatewaySnapshot } from "./types.ts";

export const configChannel = "warden_gateway_config";

/** A key look-up failed or could not be answered in time: the spec's "database is unavailable". */
export class KeyLookupFailed extends Error {}

export interface WatcherOptions {
  databaseUrl: string;
  load: (version: number) => Promise<GatewaySnapshot>;
  logger: Logger;
  /** The one database call the request path may make, for a key the snapshot does not know. */
  keyLookupTimeoutMs: number;
}

/** How long a key that the database did not know stays known as unknown. */
const negativeCacheMs = 2_000;
const negativeCacheMax = 10_000;

/**
 * Keeps this process's snapshot of the gateway configuration current. A LISTEN connection hears
 * every change (the tables notify from triggers) and a reload follows at once; changes that
 * arrive during a reload cause one more. A lost connection is re-made, followed by a reload, as
 * notifications may have been missed meanwhile.
 */
export class ConfigWatcher {
  #snapshot: GatewaySnapshot;
  readonly #options: WatcherOptions;
  readonly #lookups: pg.Pool;
  readonly #unknownKeys = new Map<string, number>();
  #listener: pg.Client | undefined;
  #reloading: Promise<void> | undefined;
  #dirty = false;
  #stopped = false;
  #reconnectTimer: NodeJS.Timeout | undefined;

  private constructor(options: WatcherOptions, snapshot: GatewaySnapshot) {
    this.#options = options;
    this.#snapshot = snapshot;
    this.#lookups = new pg.Pool({
      connectionString: options.databaseUrl,
      max: 2,
      connectionTimeoutMillis: options.keyLookupTimeoutMs,
      statement_timeout: options.keyLookupTimeoutMs,
    });
    this.#lookups.on("error", (err) => options.logger.warn({ err }, "gateway key look-up connection failed"));
  }

  static async start(options: WatcherOptions): Promise<ConfigWatcher> {
    const watcher = new ConfigWatcher(options, await options.load(1));
    await watcher.#listen();
    return watcher;
  }

  get snapshot(): GatewaySnapshot {
    return this.#snapshot;
  }

  /**
   * The key for a hash the snapshot does not hold: it may have been created a moment ago, before
   * its notification arrived. Asks the database once, within the time limit.
   */
  async lookUpKey(keyHash: string): Promise<GatewayKey | null> {
    const known = this.#snapshot.keysByHash.get(keyHash);
    if (known) return known;
    const unknownUntil = this.#unknownKeys.get(keyHash);
    if (unknownUntil !== undefined && unknownUntil > Date.now()) return null;
    const found = await this.#withinLimit(this.#lookups.query("select 1 from gateway_key where key_hash = $1", [keyHash]));
    if (found.rowCount === 0) {
      if (this.#unknownKeys.size >= negativeCacheMax) this.#unknownKeys.clear();
      this.#unknownKeys.set(keyHash, Date.now() + negativeCacheMs);
      return null;
    }
    await this.#withinLimit(this.reload());
    return this.#snapshot.keysByHash.get(keyHash) ?? null;
  }

  /** Reloads now; concurrent calls share one reload, and a change during it causes one more. */
  reload(): Promise<void> {
    if (this.#reloading) {
      this.#dirty = true;
      return this.#reloading;
    }
    this.#reloading = (async () => {
      try {
        do {
          this.#dirty = false;
          this.#snapshot = await this.#options.load(this.#snapshot.version + 1);
          this.#unknownKeys.clear();
        } while (this.#dirty && !this.#stopped);
      } finally {
        this.#reloading = undefined;
      }
    })();
    return this.#reloading;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#reconnectTimer);
    await this.#listener?.end().catch(() => undefined);
    await this.#reloading?.catch(() => undefined);
    await this.#lookups.end();
  }

  async #listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.#options.databaseUrl });
    client.on("notification", () => {
      this.reload().catch((err: unknown) => this.#options.logger.error({ err }, "gateway configuration reload failed"));
    });
    client.on("error", (err) => {
      this.#options.logger.warn({ err }, "gateway configuration listener lost its connection");
      this.#reconnect();
    });
    client.on("end", () => this.#reconnect());
    await client.connect();
    await client.query(`listen ${configChannel}`);
    this.#listener = client;
  }

  #reconnect(): void {
    if (this.#stopped || this.#reconnectTimer) return;
    this.#listener = undefined;
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = undefined;
      this.#listen()
        .then(() => this.reload())
        .catch((err: unknown) => {
          this.#options.logger.warn({ err }, "gateway configuration listener could not reconnect; retrying");
          this.#reconnect();
        });
    }, 500);
  }

  #withinLimit<T>(work: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new KeyLookupFailed("timed out")), this.#options.keyLookupTimeoutMs);
    });
    const failed = work.catch((err: unknown) => {
      throw new KeyLookupFailed("failed", { cause: err });
    });
    return Promise.race([failed, limit]).finally(() => clearTimeout(timer));
  }
}

import type pg from "pg";
import type { DatabaseDeadlines } from "../../db/deadlines.ts";
import { createClient, createPool, type DeadlineClient } from "../../db/pools.ts";
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
  /** The listener's connection and heartbeat; the look-ups keep their own tighter bound. */
  deadlines: DatabaseDeadlines;
}

/** How long a key that the database did not know stays known as unknown. */
const negativeCacheMs = 2_000;
const negativeCacheMax = 10_000;

/**
 * Keeps this process's snapshot of the gateway configuration current. A LISTEN connection hears
 * every change (the tables notify from triggers) and a reload follows at once; changes that
 * arrive during a reload cause one more. A lost connection is re-made, followed by a reload, as
 * notifications may have been missed meanwhile. A frozen server does not close the connection, so
 * a heartbeat asks `select 1` now and then; a heartbeat or a reload that fails counts as a lost
 * connection too. While the database is away, requests go on being served from the snapshot.
 */
export class ConfigWatcher {
  #snapshot: GatewaySnapshot;
  readonly #options: WatcherOptions;
  readonly #lookups: pg.Pool;
  readonly #unknownKeys = new Map<string, number>();
  #listener: DeadlineClient | undefined;
  #reloading: Promise<void> | undefined;
  #dirty = false;
  #stopped = false;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #heartbeatTimer: NodeJS.Timeout | undefined;
  /** The connection whose heartbeat is still unanswered, if any. */
  #beating: DeadlineClient | undefined;

  private constructor(options: WatcherOptions, snapshot: GatewaySnapshot) {
    this.#options = options;
    this.#snapshot = snapshot;
    const limit = options.keyLookupTimeoutMs;
    this.#lookups = createPool({
      databaseUrl: options.databaseUrl,
      // Every bound that a look-up could wait out is the look-up's own.
      deadlines: { ...options.deadlines, connectTimeoutMs: limit, statementTimeoutMs: limit, lockTimeoutMs: limit, queryTimeoutMs: limit },
      max: 2,
      onIdleError: (err) => options.logger.warn({ err }, "gateway key look-up connection failed"),
    });
  }

  static async start(options: WatcherOptions): Promise<ConfigWatcher> {
    const watcher = new ConfigWatcher(options, await options.load(1));
    await watcher.#listen();
    if (options.deadlines.heartbeatIntervalMs > 0) {
      watcher.#heartbeatTimer = setInterval(() => watcher.#heartbeat(), options.deadlines.heartbeatIntervalMs);
      watcher.#heartbeatTimer.unref();
    }
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
      } catch (err) {
        // The change that asked for this reload is not in the snapshot: re-listen, and reload again.
        this.#lose(this.#listener, err);
        throw err;
      } finally {
        this.#reloading = undefined;
      }
    })();
    return this.#reloading;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#reconnectTimer);
    clearInterval(this.#heartbeatTimer);
    await this.#listener?.end().catch(() => undefined);
    await this.#reloading?.catch(() => undefined);
    await this.#lookups.end();
  }

  async #listen(): Promise<void> {
    const client = createClient(this.#options.databaseUrl, this.#options.deadlines);
    client.on("notification", () => {
      this.reload().catch((err: unknown) => this.#options.logger.error({ err }, "gateway configuration reload failed"));
    });
    client.on("error", (err) => this.#lose(client, err));
    client.on("end", () => this.#lose(client, new Error("connection ended")));
    try {
      await client.connect();
      await client.query(`listen ${configChannel}`);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    this.#listener = client;
  }

  /**
   * A `select 1` on the listener's connection; one not answered in time closes it (DeadlineClient).
   * None while the last is still waiting on that connection (a database slow to answer): it would
   * only queue behind it, and a query queued on a busy pg client is deprecated (pg warns once two
   * wait; pg 9 refuses it).
   */
  #heartbeat(): void {
    const client = this.#listener;
    if (!client || this.#beating === client) return;
    this.#beating = client;
    client
      .query("select 1")
      .catch((err: unknown) => this.#lose(client, err))
      .finally(() => {
        if (this.#beating === client) this.#beating = undefined;
      });
  }

  /** The listener (if it is still the current one) is gone or not to be trusted: a new one follows. */
  #lose(client: DeadlineClient | undefined, err: unknown): void {
    if (this.#stopped || !client || client !== this.#listener) return;
    this.#listener = undefined;
    this.#options.logger.warn({ err }, "gateway configuration listener lost its connection");
    client.end().catch(() => undefined);
    this.#reconnect();
  }

  #reconnect(): void {
    if (this.#stopped || this.#reconnectTimer) return;
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = undefined;
      this.#listen()
        .then(() => this.reload())
        .catch((err: unknown) => {
          this.#options.logger.warn({ err }, "gateway configuration listener could not reconnect; retrying");
          // A failed reload has already let the new listener go; a failed connect had none.
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

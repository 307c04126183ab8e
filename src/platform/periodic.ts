import type pg from "pg";
import type { Logger } from "./logger.ts";

export interface PeriodicOptions {
  /** What the work is, for the log when a pass fails. */
  name: string;
  /** The session advisory lock that makes one process at a time do the work. */
  lockId: number;
  pool: pg.Pool;
  intervalMs: number;
  logger: Logger;
  pass: () => Promise<void>;
}

/**
 * Work that every worker process runs every `intervalMs`, and only one of them at a time: the
 * first to take the advisory lock works; the others skip the pass. A failed pass is logged and
 * tried again at the next interval.
 */
export class Periodic {
  readonly #options: PeriodicOptions;
  readonly #timer: NodeJS.Timeout;
  #running: Promise<void> | undefined;

  constructor(options: PeriodicOptions) {
    this.#options = options;
    this.#timer = setInterval(() => void this.run(), options.intervalMs);
    this.#timer.unref();
  }

  /** One pass; concurrent calls share it. */
  run(): Promise<void> {
    this.#running ??= this.#locked()
      .catch((err: unknown) => this.#options.logger.warn({ err }, `${this.#options.name} failed; will retry at the next run`))
      .finally(() => {
        this.#running = undefined;
      });
    return this.#running;
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#running;
  }

  async #locked(): Promise<void> {
    const { pool, lockId, pass } = this.#options;
    const lock = await pool.connect();
    try {
      const { rows } = await lock.query<{ locked: boolean }>("select pg_try_advisory_lock($1) as locked", [lockId]);
      if (!rows[0]?.locked) return;
      try {
        await pass();
      } finally {
        await lock.query("select pg_advisory_unlock($1)", [lockId]);
      }
    } finally {
      lock.release();
    }
  }
}

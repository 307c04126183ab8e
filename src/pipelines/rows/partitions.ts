import type pg from "pg";
import { inTransaction } from "../../db/pools.ts";

/** Partitions are made one at a time across every process, under this transaction-scoped lock. */
const partitionLockId = 7_230_003;

/** The first instant of the month of `seconds`, UTC, and of the month after. */
function monthOf(seconds: number): { name: string; from: string; to: string; start: number; end: number } {
  const date = new Date(seconds * 1000);
  const year = date.getUTCFullYear();
  const month = date.getUTCMonth();
  const next = new Date(Date.UTC(year, month + 1, 1));
  const pad = (n: number) => String(n).padStart(2, "0");
  return {
    start: Date.UTC(year, month, 1) / 1000,
    end: next.getTime() / 1000,
    name: `inference_row_y${year}m${pad(month + 1)}`,
    from: `${year}-${pad(month + 1)}-01 00:00:00+00`,
    to: `${next.getUTCFullYear()}-${pad(next.getUTCMonth() + 1)}-01 00:00:00+00`,
  };
}

/**
 * The monthly partitions of inference_row, made when the first row of a month arrives. A partition
 * is made as a plain table and then attached: attaching locks the parent only against other schema
 * changes (SHARE UPDATE EXCLUSIVE), where CREATE TABLE … PARTITION OF would lock out every reader
 * and writer, and would wait for, and deadlock with, a long load that is inserting meanwhile. A
 * month this process has seen is not asked about again.
 */
export class RowPartitions {
  readonly #known = new Set<string>();

  async ensure(pool: pg.Pool, timestamps: Iterable<number>): Promise<void> {
    const missing = new Map<string, ReturnType<typeof monthOf>>();
    let monthStart = Number.NaN;
    let monthEnd = Number.NaN;
    for (const seconds of timestamps) {
      // Rows of one batch mostly share a month: skip the date arithmetic for them.
      if (seconds >= monthStart && seconds < monthEnd) continue;
      const month = monthOf(seconds);
      monthStart = month.start;
      monthEnd = month.end;
      if (!this.#known.has(month.name)) missing.set(month.name, month);
    }
    for (const month of missing.values()) {
      await this.#make(pool, month);
      this.#known.add(month.name);
    }
  }

  /** Forgets the partitions seen, so that the next ensure() asks the database again. */
  forget(): void {
    this.#known.clear();
  }

  async #make(pool: pg.Pool, month: ReturnType<typeof monthOf>): Promise<void> {
    await inTransaction(pool, async (client) => {
      await client.query(`select pg_advisory_xact_lock(${partitionLockId})`);
      const exists = await client.query("select 1 from pg_inherits where inhrelid = to_regclass($1)", [month.name]);
      if (exists.rowCount === 0) {
        await client.query(`create table if not exists ${month.name} (like inference_row including defaults including constraints)`);
        await client.query(`alter table inference_row attach partition ${month.name} for values from ('${month.from}') to ('${month.to}')`);
      }
    });
  }
}

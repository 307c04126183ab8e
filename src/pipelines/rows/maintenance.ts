import type { MikroORM } from "@mikro-orm/postgresql";
import type pg from "pg";
import type { Logger } from "../../platform/logger.ts";
import { Periodic } from "../../platform/periodic.ts";
import { projectRetentionDays } from "../../projects/queries.ts";
import { InferencePipelineEntity } from "../entities.ts";
import type { RowStore } from "./row-store.ts";

/** One process at a time does the maintenance, under this session lock. */
const maintenanceLockId = 7_230_004;

/** Batches per pipeline and run at most: what is left waits for the next run. */
const maxBatchesPerRun = 200;

/**
 * Deletes rows past their pipeline's retention (its retentionDays, else its project's
 * dataRetentionDays), and the rows of deleted pipelines, in batches that each stay well inside the
 * statement deadline. Runs every `intervalMs` in each API process; the first to take the lock works.
 */
export class RowMaintenance {
  readonly #orm: MikroORM;
  readonly #pool: pg.Pool;
  readonly #store: RowStore;
  readonly #periodic: Periodic;

  constructor(options: { orm: MikroORM; pool: pg.Pool; store: RowStore; logger: Logger; intervalMs: number }) {
    this.#orm = options.orm;
    this.#pool = options.pool;
    this.#store = options.store;
    this.#periodic = new Periodic({
      name: "row retention",
      lockId: maintenanceLockId,
      pool: options.pool,
      intervalMs: options.intervalMs,
      logger: options.logger,
      pass: async () => {
        await this.#purgeDeleted();
        await this.#expire();
      },
    });
  }

  stop(): Promise<void> {
    return this.#periodic.stop();
  }

  async #purgeDeleted(): Promise<void> {
    const { rows } = await this.#pool.query<{ pipeline_id: string }>("select pipeline_id from inference_row_purge order by requested_at limit 100");
    for (const { pipeline_id: pipelineId } of rows) {
      const done = await this.#batches(() => this.#store.purgeBatch(pipelineId));
      if (done) await this.#pool.query("delete from inference_row_purge where pipeline_id = $1", [pipelineId]);
    }
  }

  async #expire(): Promise<void> {
    const em = this.#orm.em.fork();
    const pipelines = await em.find(InferencePipelineEntity, {}, { fields: ["id", "projectId", "retentionDays"] });
    const byProject = await projectRetentionDays(em, [...new Set(pipelines.map((p) => p.projectId))]);
    for (const pipeline of pipelines) {
      const days = pipeline.retentionDays ?? byProject.get(pipeline.projectId);
      if (days !== undefined) await this.#batches(() => this.#store.expireBatch(pipeline.id, days));
    }
  }

  /** Runs `batch` until it deletes less than a full batch; false if the run's share ran out first. */
  async #batches(batch: () => Promise<number>): Promise<boolean> {
    for (let i = 0; i < maxBatchesPerRun; i++) {
      if ((await batch()) < this.#store.batchSize) return true;
    }
    return false;
  }
}

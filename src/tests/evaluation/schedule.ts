import type { MikroORM } from "@mikro-orm/postgresql";
import type pg from "pg";
import type { Logger } from "../../platform/logger.ts";
import { Periodic } from "../../platform/periodic.ts";
import { pipelineIdsOfProject } from "../../pipelines/queries.ts";
import type { TaskQueue } from "../../tasks/queue.ts";
import { TestEntity, type Test } from "../entities.ts";
import { windowEvaluationTaskType, type WindowEvaluationPayload } from "./task.ts";
import { defaultEvaluationWindow, pipelinesOfTest } from "./windows.ts";

/** Taken by the process that schedules: one at a time across processes. */
const scheduleLockId = 0x5741_5254;
/** Windows one pass queues per test and pipeline, at most: a backlog is worked off pass by pass. */
const maxWindowsPerPass = 1_000;

interface Cursor {
  test_id: string;
  pipeline_id: string;
  next: Date;
}

/**
 * Monitoring evaluation on a schedule: every `intervalMs`, each monitoring test's due windows are
 * queued as durable tasks (task.ts), one per test and pipeline. A window `[start, end)` is due at
 * `end + delayWindow`, so ground truth that comes late within the delay is measured. A cursor per
 * test and pipeline (test_schedule) moves past what was queued, after the task is recorded: a crash
 * in between queues those windows again, and the task keeps the results they already have. The
 * first window is the one the test was created in, or, with `includeHistoricalData`, the one of
 * the pipeline's oldest row. Each pipeline shows when its next window falls due.
 */
export class EvaluationScheduler {
  readonly #orm: MikroORM;
  readonly #pool: pg.Pool;
  readonly #tasks: TaskQueue;
  readonly #periodic: Periodic;

  constructor(options: { orm: MikroORM; pool: pg.Pool; tasks: TaskQueue; logger: Logger; intervalMs: number }) {
    this.#orm = options.orm;
    this.#pool = options.pool;
    this.#tasks = options.tasks;
    this.#periodic = new Periodic({
      name: "scheduling evaluations",
      lockId: scheduleLockId,
      pool: options.pool,
      intervalMs: options.intervalMs,
      logger: options.logger,
      pass: () => this.#schedule(Math.floor(Date.now() / 1000)),
    });
  }

  stop(): Promise<void> {
    return this.#periodic.stop();
  }

  async #schedule(now: number): Promise<void> {
    const em = this.#orm.em.fork();
    const tests = await em.find(TestEntity, { usesProductionData: true, archived: false }, { orderBy: { dateCreated: "asc" } });
    if (tests.length === 0) return;
    const { rows: cursors } = await this.#pool.query<Cursor>(
      "select test_id, pipeline_id, next_window_start as next from test_schedule where test_id = any($1)",
      [tests.map((t) => t.id)],
    );
    const cursorOf = new Map(cursors.map((c) => [`${c.test_id}/${c.pipeline_id}`, Math.floor(c.next.getTime() / 1000)]));
    const pipelinesOf = new Map<string, string[]>();
    const nextDue = new Map<string, number>();
    for (const test of tests) {
      if (!pipelinesOf.has(test.projectId)) pipelinesOf.set(test.projectId, await pipelineIdsOfProject(em, test.projectId));
      const windowSeconds = test.evaluationWindow || defaultEvaluationWindow;
      const delay = test.delayWindow ?? 0;
      for (const pipelineId of pipelinesOfTest(test, pipelinesOf.get(test.projectId)!)) {
        let start = cursorOf.get(`${test.id}/${pipelineId}`) ?? (await this.#firstWindow(test, pipelineId, windowSeconds));
        const starts: number[] = [];
        while (start + windowSeconds + delay <= now && starts.length < maxWindowsPerPass) {
          starts.push(start);
          start += windowSeconds;
        }
        if (starts.length > 0) await this.#queue(test, pipelineId, windowSeconds, starts, start);
        const due = start + windowSeconds + delay;
        nextDue.set(pipelineId, Math.min(nextDue.get(pipelineId) ?? due, due));
      }
    }
    for (const [pipelineId, due] of nextDue) {
      await this.#pool.query(
        "update inference_pipeline set date_of_next_evaluation = to_timestamp($2) where id = $1 and date_of_next_evaluation is distinct from to_timestamp($2)",
        [pipelineId, due],
      );
    }
  }

  /** Queues the windows, then moves the cursor past them (the task, once recorded, is durable). */
  async #queue(test: Test, pipelineId: string, windowSeconds: number, starts: number[], next: number): Promise<void> {
    const payload: WindowEvaluationPayload = { testId: test.id, pipelineId, windowSeconds, starts, overwrite: false };
    await this.#tasks.enqueue(this.#orm.em.fork(), test.workspaceId, windowEvaluationTaskType, payload);
    await this.#pool.query(
      `insert into test_schedule (test_id, pipeline_id, next_window_start) values ($1, $2, to_timestamp($3))
       on conflict (test_id, pipeline_id) do update set next_window_start = excluded.next_window_start`,
      [test.id, pipelineId, next],
    );
  }

  /** The window the test was created in; with includeHistoricalData, that of the pipeline's oldest row. */
  async #firstWindow(test: Test, pipelineId: string, windowSeconds: number): Promise<number> {
    let from = Math.floor(test.dateCreated.getTime() / 1000);
    if (test.includeHistoricalData) {
      const { rows } = await this.#pool.query<{ oldest: number | null }>(
        "select extract(epoch from min(ts))::float8 as oldest from inference_row where pipeline_id = $1",
        [pipelineId],
      );
      if (rows[0]?.oldest != null) from = Math.min(from, Math.floor(rows[0].oldest));
    }
    return Math.floor(from / windowSeconds) * windowSeconds;
  }
}

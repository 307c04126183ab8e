import { randomUUID } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import type { EntityManager, MikroORM } from "@mikro-orm/postgresql";
import { PgBoss } from "pg-boss";
import { TaskStatus } from "../../gen/warden/tasks/v1/tasks_pb.js";
import type { DatabaseDeadlines } from "../db/deadlines.ts";
import { deadlineOptions } from "../db/pools.ts";
import { enumName } from "../platform/enums.ts";
import type { Logger } from "../platform/logger.ts";
import { TaskResultEntity } from "./entities.ts";

/** Does the work of one task. It owns the task row's final status. */
export type TaskHandler = (orm: MikroORM, taskResultId: string) => Promise<void>;

/**
 * Called once a task has failed on every attempt: what the task was for (a commit, say) is told
 * it failed, so that nobody waits on it forever. The task row itself is marked failed.
 */
export type TaskGiveUp = (orm: MikroORM, taskResultId: string, error: Error) => Promise<void>;

interface JobData {
  taskResultId: string;
}

/**
 * A worker running a job beats every `heartbeatSeconds / 2`. A job whose beats stop for
 * `heartbeatSeconds` (its process died) is failed by the next monitor pass of any live process,
 * every `monitorIntervalSeconds`, and retried after the first retry delay (1 to 2 s): so a task
 * whose process was killed runs again about 10 + 2 + 2 s after it last beat, instead of waiting
 * out its expiry (it took 122 s). 10 s is the least heartbeat pg-boss takes.
 */
const heartbeatSeconds = 10;
const monitorIntervalSeconds = 2;

const queueOptions = {
  // The bound on a job whose worker lives but is stuck; a worker that died is found by its heartbeat.
  expireInSeconds: 120,
  heartbeatSeconds,
  retryLimit: 5,
  retryDelay: 1,
  retryBackoff: true,
} as const;

/**
 * Durable background tasks on pg-boss, in the same database. The `task_result` row is what
 * callers poll; the pg-boss job only carries its id, and uses it as its own id, so that sending
 * a task twice queues it once.
 */
export class TaskQueue {
  private readonly boss: PgBoss;
  private readonly orm: MikroORM;
  private readonly logger: Logger;
  private readonly handlers = new Map<string, { run: TaskHandler; giveUp?: TaskGiveUp; workers: number }>();

  constructor(databaseUrl: string, deadlines: DatabaseDeadlines, orm: MikroORM, logger: Logger) {
    this.boss = new PgBoss({
      connectionString: databaseUrl,
      schema: "pgboss",
      max: 4,
      ...deadlineOptions(deadlines),
      superviseIntervalSeconds: monitorIntervalSeconds,
      monitorIntervalSeconds,
    });
    this.boss.on("error", (err) => logger.error({ err }, "pg-boss error"));
    this.orm = orm;
    this.logger = logger;
  }

  /** `workers`: how many of this type's tasks one process runs at once. */
  register(type: string, run: TaskHandler, options: { giveUp?: TaskGiveUp; workers?: number } = {}): void {
    this.handlers.set(type, { run, giveUp: options.giveUp, workers: options.workers ?? 1 });
  }

  async start(options: { runWorkers: boolean }): Promise<void> {
    await this.boss.start();
    for (const type of this.handlers.keys()) {
      await this.boss.createQueue(type, queueOptions);
      // A queue made by an earlier version keeps its options until told: jobs take the queue's.
      await this.boss.updateQueue(type, queueOptions);
    }
    if (!options.runWorkers) return;
    for (const [type, handler] of this.handlers) {
      for (let i = 0; i < handler.workers; i++) await this.work(type, handler);
    }
    await this.requeueOpenTasks();
  }

  async stop(): Promise<void> {
    await this.boss.stop({ graceful: true, timeout: 10_000 });
  }

  /** Records a queued task and queues its job. Returns the task's id. */
  async enqueue(em: EntityManager, workspaceId: string, type: string, payload: JsonObject): Promise<string> {
    if (!this.handlers.has(type)) throw new Error(`no handler for task type ${type}`);
    const now = new Date();
    const id = randomUUID();
    em.create(TaskResultEntity, {
      id,
      workspaceId,
      type,
      status: enumName(TaskStatus, TaskStatus.QUEUED),
      payload,
      failures: [],
      result: null,
      error: null,
      dateCreated: now,
      dateUpdated: now,
      dateCompleted: null,
    });
    await em.flush();
    await this.send(type, id);
    return id;
  }

  /** One worker of a type's tasks. */
  private async work(type: string, handler: { run: TaskHandler }): Promise<void> {
    let workerId: string | undefined;
    workerId = await this.boss.work<JobData>(type, { batchSize: 1, pollingIntervalSeconds: 0.5 }, async ([job]) => {
      if (!job) return;
      // Told while a job runs, the worker fetches the next one as soon as this one is done,
      // instead of after its polling interval: tasks queued together (a window's tests) run
      // back to back, not one per half second.
      if (workerId) this.boss.notifyWorker(workerId);
      try {
        await handler.run(this.orm, job.data.taskResultId);
      } catch (err) {
        // pg-boss retries a job that throws; the last attempt's failure is the task's.
        if (job.retryCount < queueOptions.retryLimit) throw err;
        await this.giveUp(type, job.data.taskResultId, err instanceof Error ? err : new Error(String(err)));
      }
    });
  }

  private async giveUp(type: string, taskResultId: string, error: Error): Promise<void> {
    this.logger.error({ err: error, type, taskResultId }, "task failed on every attempt");
    const now = new Date();
    await this.orm.em.fork().nativeUpdate(
      TaskResultEntity,
      { id: taskResultId },
      { status: enumName(TaskStatus, TaskStatus.FAILED), error: error.message, dateUpdated: now, dateCompleted: now },
    );
    await this.handlers.get(type)?.giveUp?.(this.orm, taskResultId, error);
  }

  private async send(type: string, taskResultId: string): Promise<void> {
    await this.boss.send(type, { taskResultId } satisfies JobData, { id: taskResultId });
  }

  /**
   * A task whose row was written but whose job was lost (the process died in between) is queued
   * again. Jobs that do exist are left alone: the send is idempotent by id.
   */
  private async requeueOpenTasks(): Promise<void> {
    const open = await this.orm.em.fork().find(
      TaskResultEntity,
      { status: { $in: [enumName(TaskStatus, TaskStatus.QUEUED), enumName(TaskStatus, TaskStatus.RUNNING)] } },
      { fields: ["id", "type"] },
    );
    for (const task of open) {
      if (this.handlers.has(task.type)) await this.send(task.type, task.id);
    }
    if (open.length > 0) this.logger.info({ count: open.length }, "re-queued open tasks");
  }
}

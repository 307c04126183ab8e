import type { JsonObject } from "@bufbuild/protobuf";
import type { MikroORM } from "@mikro-orm/postgresql";
import { TaskStatus } from "../../gen/warden/tasks/v1/tasks_pb.js";
import { enumName } from "../platform/enums.ts";
import { TaskResultEntity, type TaskResult } from "./entities.ts";

const status = (value: TaskStatus) => enumName(TaskStatus, value);

/**
 * The task, marked running, for its handler to work on; undefined when it is gone or finished
 * already (a job delivered again after its task completed). A task running when its process died
 * is running still, and is taken up again.
 */
export async function startTask(orm: MikroORM, taskResultId: string): Promise<TaskResult | undefined> {
  const em = orm.em.fork();
  const task = await em.findOne(TaskResultEntity, { id: taskResultId });
  if (!task || task.status === status(TaskStatus.COMPLETED) || task.status === status(TaskStatus.FAILED)) return undefined;
  await em.nativeUpdate(TaskResultEntity, { id: taskResultId }, { status: status(TaskStatus.RUNNING), dateUpdated: new Date() });
  return task;
}

/** Marks a task done, with what it reports to whoever polls it. */
export async function completeTask(orm: MikroORM, taskResultId: string, result: JsonObject | null = null): Promise<void> {
  const now = new Date();
  await orm.em.fork().nativeUpdate(
    TaskResultEntity,
    { id: taskResultId },
    { status: status(TaskStatus.COMPLETED), result, error: null, dateUpdated: now, dateCompleted: now },
  );
}

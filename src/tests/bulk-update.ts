import type { JsonObject } from "@bufbuild/protobuf";
import { LockMode } from "@mikro-orm/core";
import type { MikroORM } from "@mikro-orm/postgresql";
import { TaskStatus } from "../../gen/warden/tasks/v1/tasks_pb.js";
import { enumName } from "../platform/enums.ts";
import { TaskResultEntity, type TaskFailure } from "../tasks/entities.ts";
import { startTask } from "../tasks/lifecycle.ts";
import { TestEntity, type StoredThreshold } from "./entities.ts";

export const bulkUpdateTaskType = "tests.bulk_update";
export const maxBulkUpdatePayloads = 400;

/** What the API queues: checked already, ready to apply. */
export interface BulkUpdatePayload extends JsonObject {
  projectId: string;
  payloads: {
    id: string;
    name?: string;
    description?: string;
    archived?: boolean;
    suggested?: boolean;
    thresholds?: StoredThreshold[];
  }[];
}

const status = (value: TaskStatus) => enumName(TaskStatus, value);

/**
 * Applies a bulk test update: every payload in one transaction, or none of them. A test that is
 * not in the project fails the whole task, and the task result names each such ID and why.
 * Running it again after a crash is safe: a finished task is left alone.
 */
export async function runBulkUpdate(orm: MikroORM, taskResultId: string): Promise<void> {
  if (!(await startTask(orm, taskResultId))) return;
  await orm.em.fork().transactional(async (em) => {
    const task = await em.findOne(TaskResultEntity, { id: taskResultId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!task || task.status === status(TaskStatus.COMPLETED) || task.status === status(TaskStatus.FAILED)) return;
    const { projectId, payloads } = task.payload as BulkUpdatePayload;
    const ids = payloads.map((p) => p.id);
    const tests = await em.find(TestEntity, { id: { $in: ids }, projectId, workspaceId: task.workspaceId }, {
      lockMode: LockMode.PESSIMISTIC_WRITE,
    });
    const byId = new Map(tests.map((t) => [t.id, t]));
    const failures: TaskFailure[] = ids
      .filter((id) => !byId.has(id))
      .map((id) => ({ id, reason: "No test with this ID in the project" }));
    const now = new Date();
    task.dateUpdated = now;
    task.dateCompleted = now;
    if (failures.length > 0) {
      // Nothing of this task is applied: the tests stay as they were.
      task.status = status(TaskStatus.FAILED);
      task.failures = failures;
      task.error = `${failures.length} of ${ids.length} tests could not be updated; no test was changed`;
      return;
    }
    for (const payload of payloads) {
      const test = byId.get(payload.id)!;
      if (payload.name !== undefined) test.name = payload.name;
      if (payload.description !== undefined) test.description = payload.description;
      if (payload.thresholds !== undefined) test.thresholds = payload.thresholds;
      if (payload.suggested !== undefined) test.suggested = payload.suggested;
      if (payload.archived !== undefined && payload.archived !== test.archived) {
        test.archived = payload.archived;
        test.dateArchived = payload.archived ? now : null;
      }
      test.dateUpdated = now;
    }
    task.status = status(TaskStatus.COMPLETED);
    task.result = { updatedIds: ids };
  });
}

import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { TaskStatus, type TaskService } from "../../gen/warden/tasks/v1/tasks_pb.js";
import { emOf, principalOf } from "../platform/context.ts";
import { enumValue } from "../platform/enums.ts";
import { notFound } from "../platform/errors.ts";
import { requireUuid } from "../platform/validate.ts";
import { TaskResultEntity } from "./entities.ts";

/** Where a task's outcome can be polled, relative to the API's base URL. */
export function taskResultPath(taskResultId: string): string {
  return `/v1/task-results/${taskResultId}`;
}

export function createTaskService(): ServiceImpl<typeof TaskService> {
  return {
    async getTaskResult(req, ctx) {
      const em = emOf(ctx);
      const id = requireUuid("taskResultId", req.taskResultId);
      const task = await em.findOne(TaskResultEntity, { id, workspaceId: principalOf(ctx).workspaceId });
      if (!task) throw notFound("Task result not found");
      return {
        taskResult: {
          id: task.id,
          type: task.type,
          status: enumValue(TaskStatus, task.status),
          dateCreated: timestampFromDate(task.dateCreated),
          dateUpdated: timestampFromDate(task.dateUpdated),
          dateCompleted: task.dateCompleted ? timestampFromDate(task.dateCompleted) : undefined,
          failures: task.failures,
          error: task.error ?? undefined,
          result: task.result ?? undefined,
        },
      };
    },
  };
}

import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import type { JsonObject } from "@bufbuild/protobuf";

export interface TaskFailure {
  id: string;
  reason: string;
}

export const TaskResultEntity = defineEntity({
  name: "TaskResult",
  tableName: "task_result",
  properties: {
    id: p.uuid().primary(),
    workspaceId: p.uuid(),
    type: p.string().length(64),
    status: p.string().length(16),
    /** What the task was asked to do, as the queue's job carries only this row's id. */
    payload: p.json<JsonObject>(),
    failures: p.json<TaskFailure[]>(),
    result: p.json<JsonObject>().nullable(),
    error: p.text().nullable(),
    dateCreated: p.datetime(),
    dateUpdated: p.datetime(),
    dateCompleted: p.datetime().nullable(),
  },
});
export type TaskResult = InferEntity<typeof TaskResultEntity>;

export const taskEntities = [TaskResultEntity];

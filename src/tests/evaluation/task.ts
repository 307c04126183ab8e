import { randomUUID } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import type { MikroORM } from "@mikro-orm/postgresql";
import { TestResultStatus } from "../../../gen/warden/tests/v1/tests_pb.js";
import { enumName } from "../../platform/enums.ts";
import { completeTask, startTask } from "../../tasks/lifecycle.ts";
import { TestEntity, TestResultEntity } from "../entities.ts";
import { evaluateWindow, type WindowMeter } from "./window.ts";

export const windowEvaluationTaskType = "tests.evaluate_windows";

/** One test on one pipeline, over windows of `windowSeconds` starting at `starts` (UNIX seconds). */
export interface WindowEvaluationPayload extends JsonObject {
  testId: string;
  pipelineId: string;
  windowSeconds: number;
  starts: number[];
  overwrite: boolean;
}

const onConflictReplace = `do update set status = excluded.status, status_message = excluded.status_message,
  expected_values = excluded.expected_values, date_updated = excluded.date_updated`;

/**
 * Evaluates a monitoring test on the windows of one pipeline, oldest first. A window that has a
 * result keeps it unless the task overwrites; the unique index on (test, pipeline, window) makes
 * a window's result single even when two tasks evaluate it at once. Run again after a crash, the
 * task skips (or, overwriting, redoes) the windows done before.
 */
export function windowEvaluationHandler(meter: WindowMeter) {
  return async function runWindowEvaluation(orm: MikroORM, taskResultId: string): Promise<void> {
    const task = await startTask(orm, taskResultId);
    if (!task) return;
    const em = orm.em.fork();
    const payload = task.payload as WindowEvaluationPayload;
    const test = await em.findOne(TestEntity, { id: payload.testId });
    let evaluated = 0;
    let kept = 0;
    for (const start of test ? payload.starts : []) {
      const window = { pipelineId: payload.pipelineId, start: new Date(start * 1000), end: new Date((start + payload.windowSeconds) * 1000) };
      const where = { testId: test!.id, inferencePipelineId: payload.pipelineId, dateDataStarts: window.start };
      if (!payload.overwrite && (await em.count(TestResultEntity, where)) > 0) {
        kept += 1;
        continue;
      }
      const result = await evaluateWindow(meter, test!, window);
      const now = new Date();
      const row = {
        status: enumName(TestResultStatus, result.status),
        statusMessage: result.statusMessage,
        expectedValues: JSON.stringify(result.expectedValues),
      };
      await em.execute(
        `insert into test_result (id, test_id, workspace_id, project_version_id, inference_pipeline_id, status, status_message,
           expected_values, date_data_starts, date_data_ends, date_created, date_updated)
         values (?, ?, ?, null, ?, ?, ?, ?::jsonb, ?, ?, ?, ?)
         on conflict (test_id, inference_pipeline_id, date_data_starts) where inference_pipeline_id is not null
         ${payload.overwrite ? onConflictReplace : "do nothing"}`,
        [randomUUID(), test!.id, test!.workspaceId, payload.pipelineId, row.status, row.statusMessage, row.expectedValues, window.start, window.end, now, now],
      );
      evaluated += 1;
    }
    await completeTask(orm, taskResultId, { evaluated, kept });
  };
}

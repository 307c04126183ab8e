import { randomUUID } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import type { MikroORM } from "@mikro-orm/postgresql";
import type pg from "pg";
import { EvaluationStatus } from "../../../gen/warden/api/v1/common_pb.js";
import { TestResultStatus } from "../../../gen/warden/tests/v1/tests_pb.js";
import { InferencePipelineEntity } from "../../pipelines/entities.ts";
import { RowMeter, windowRows } from "../../pipelines/rows/measure.ts";
import { enumName } from "../../platform/enums.ts";
import { completeTask, startTask } from "../../tasks/lifecycle.ts";
import { TestEntity, TestResultEntity } from "../entities.ts";
import { evaluateRows, type EvaluationTools, type JudgeFields } from "./evaluate.ts";

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

/** Where a judge finds a row's input and context: the columns the pipeline's latest config names. */
function judgeFieldsOf(config: Record<string, unknown> | null | undefined): JudgeFields {
  const inputs = config?.inputVariableNames;
  const context = config?.contextColumnName;
  return {
    inputColumns: Array.isArray(inputs) ? inputs.filter((v): v is string => typeof v === "string") : [],
    contextColumn: typeof context === "string" ? context : undefined,
  };
}

/**
 * Evaluates a monitoring test on the windows of one pipeline, oldest first, measuring on the
 * evaluation pool. A window that has a result keeps it unless the task overwrites; the unique index
 * on (test, pipeline, window) makes a window's result single even when two tasks evaluate it at
 * once. Run again after a crash, the task skips (or, overwriting, redoes) the windows done before.
 * The pipeline then shows when it was last evaluated.
 */
export function windowEvaluationHandler(pool: pg.Pool, tools: EvaluationTools) {
  return async function runWindowEvaluation(orm: MikroORM, taskResultId: string): Promise<void> {
    const task = await startTask(orm, taskResultId);
    if (!task) return;
    const em = orm.em.fork();
    const payload = task.payload as WindowEvaluationPayload;
    const test = await em.findOne(TestEntity, { id: payload.testId });
    const pipeline = await em.findOne(InferencePipelineEntity, { id: payload.pipelineId });
    let evaluated = 0;
    let kept = 0;
    for (const start of test && pipeline ? payload.starts : []) {
      const window = { pipelineId: payload.pipelineId, start: new Date(start * 1000), end: new Date((start + payload.windowSeconds) * 1000) };
      const where = { testId: test!.id, inferencePipelineId: payload.pipelineId, dateDataStarts: window.start };
      if (!payload.overwrite && (await em.count(TestResultEntity, where)) > 0) {
        kept += 1;
        continue;
      }
      const result = await evaluateRows(new RowMeter({ pool }, windowRows(window)), test!, tools, judgeFieldsOf(pipeline!.dataConfig), "window");
      const now = new Date();
      await em.execute(
        `insert into test_result (id, test_id, workspace_id, project_version_id, inference_pipeline_id, status, status_message,
           expected_values, date_data_starts, date_data_ends, date_created, date_updated)
         values (?, ?, ?, null, ?, ?, ?, ?::jsonb, ?, ?, ?, ?)
         on conflict (test_id, inference_pipeline_id, date_data_starts) where inference_pipeline_id is not null
         ${payload.overwrite ? onConflictReplace : "do nothing"}`,
        [randomUUID(), test!.id, test!.workspaceId, payload.pipelineId, enumName(TestResultStatus, result.status), result.statusMessage,
          JSON.stringify(result.expectedValues), window.start, window.end, now, now],
      );
      evaluated += 1;
    }
    if (evaluated > 0) {
      await em.nativeUpdate(
        InferencePipelineEntity,
        { id: payload.pipelineId },
        { status: enumName(EvaluationStatus, EvaluationStatus.COMPLETED), dateLastEvaluated: new Date() },
      );
    }
    await completeTask(orm, taskResultId, { evaluated, kept });
  };
}

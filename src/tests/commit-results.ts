import { randomUUID } from "node:crypto";
import type { EntityManager } from "@mikro-orm/postgresql";
import { TestResultStatus } from "../../gen/warden/tests/v1/tests_pb.js";
import { enumName } from "../platform/enums.ts";
import { TestEntity, TestResultEntity, type Test } from "./entities.ts";

export interface CommitEvaluation {
  workspaceId: string;
  projectId: string;
  projectVersionId: string;
  /** The datasets the commit's bundle holds. */
  datasets: { validation: boolean; training: boolean };
}

/** Why a development test has no measured value on a commit. */
function skipReason(test: Test, datasets: CommitEvaluation["datasets"]): string {
  if (test.usesValidationDataset && !datasets.validation) {
    return "The bundle has no validation dataset (validation/dataset.csv or validation/dataset.jsonl)";
  }
  if (test.usesTrainingDataset && !datasets.training) {
    return "The bundle has no training dataset (training/dataset.csv or training/dataset.jsonl)";
  }
  return `${test.subtype} is not evaluated by this server`;
}

/**
 * Writes the results of a commit: one per development test of its project (not archived), in the
 * caller's transaction, replacing those of an earlier run (a task run again after a crash leaves no
 * duplicate). No measurement is computed yet (docs/tests.md), so each result is `skipped` and says
 * why. Returns how many results were written.
 */
export async function recordCommitResults(em: EntityManager, evaluation: CommitEvaluation): Promise<number> {
  const tests = await em.find(TestEntity, {
    projectId: evaluation.projectId,
    workspaceId: evaluation.workspaceId,
    archived: false,
    $or: [{ usesValidationDataset: true }, { usesTrainingDataset: true }],
  });
  await em.nativeDelete(TestResultEntity, { projectVersionId: evaluation.projectVersionId });
  const now = new Date();
  for (const test of tests) {
    em.create(TestResultEntity, {
      id: randomUUID(),
      testId: test.id,
      workspaceId: evaluation.workspaceId,
      projectVersionId: evaluation.projectVersionId,
      inferencePipelineId: null,
      status: enumName(TestResultStatus, TestResultStatus.SKIPPED),
      statusMessage: skipReason(test, evaluation.datasets),
      expectedValues: [],
      dateDataStarts: null,
      dateDataEnds: null,
      dateCreated: now,
      dateUpdated: now,
    });
  }
  await em.flush();
  return tests.length;
}

import { randomUUID } from "node:crypto";
import type { EntityManager } from "@mikro-orm/postgresql";
import { enumName } from "../platform/enums.ts";
import { TestResultStatus } from "../../gen/warden/tests/v1/tests_pb.js";
import { TestEntity, TestResultEntity, type Test } from "./entities.ts";
import type { Outcome } from "./evaluation/evaluate.ts";

/** The development tests of a project (not archived): those a commit is evaluated on. */
export function developmentTests(em: EntityManager, workspaceId: string, projectId: string): Promise<Test[]> {
  return em.find(
    TestEntity,
    { projectId, workspaceId, archived: false, $or: [{ usesValidationDataset: true }, { usesTrainingDataset: true }] },
    { orderBy: { number: "asc" } },
  );
}

export interface CommitResults {
  workspaceId: string;
  projectVersionId: string;
  outcomes: { test: Test; outcome: Outcome }[];
}

/**
 * Writes the results of a commit, one per test, in the caller's transaction, replacing those of an
 * earlier run: a task run again after a crash leaves no duplicate.
 */
export async function recordCommitResults(em: EntityManager, results: CommitResults): Promise<void> {
  await em.nativeDelete(TestResultEntity, { projectVersionId: results.projectVersionId });
  const now = new Date();
  for (const { test, outcome } of results.outcomes) {
    em.create(TestResultEntity, {
      id: randomUUID(),
      testId: test.id,
      workspaceId: results.workspaceId,
      projectVersionId: results.projectVersionId,
      inferencePipelineId: null,
      status: enumName(TestResultStatus, outcome.status),
      statusMessage: outcome.statusMessage,
      expectedValues: outcome.expectedValues,
      dateDataStarts: null,
      dateDataEnds: null,
      dateCreated: now,
      dateUpdated: now,
    });
  }
  await em.flush();
}

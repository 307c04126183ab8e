import type { JsonObject } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import type { MikroORM } from "@mikro-orm/postgresql";
import type pg from "pg";
import { EvaluationStatus } from "../../gen/warden/api/v1/common_pb.js";
import { TestResultStatus } from "../../gen/warden/tests/v1/tests_pb.js";
import type { ReadLimits } from "../pipelines/files/read-rows.ts";
import { enumName } from "../platform/enums.ts";
import type { Logger } from "../platform/logger.ts";
import type { ObjectStore } from "../storage/object-store.ts";
import { TaskResultEntity } from "../tasks/entities.ts";
import { completeTask, startTask } from "../tasks/lifecycle.ts";
import { developmentTests, recordCommitResults, type CommitResults } from "../tests/commit-results.ts";
import { evaluateRows, type EvaluationTools, type Outcome } from "../tests/evaluation/evaluate.ts";
import { BundleError, readBundle, type Bundle } from "./bundle.ts";
import { datasetColumns, StagedDatasets } from "./datasets.ts";
import { ProjectVersionEntity } from "./entities.ts";

export const commitEvaluationTaskType = "commits.evaluate";

export interface CommitEvaluationPayload extends JsonObject {
  projectVersionId: string;
}

export interface CommitEvaluationOptions {
  objects: Pick<ObjectStore, "open">;
  /** The largest bundle read. */
  maxBytes: number;
  /** The bounds on a dataset's rows (those of data loads). */
  datasetLimits: ReadLimits;
  /** The evaluation pool: datasets are staged and measured on one of its connections. */
  pool: pg.Pool;
  tools: EvaluationTools;
  logger: Logger;
}

const commitStatus = (value: EvaluationStatus) => enumName(EvaluationStatus, value);

const skipped = (statusMessage: string): Outcome => ({ status: TestResultStatus.SKIPPED, statusMessage, expectedValues: [] });

/** What a run ends with: the results to write, or the message of a bundle that could not be read. */
type Run = { outcomes: CommitResults["outcomes"] } | { unreadable: string };

/** A summary of the results, for the commit's status message. */
function summary(outcomes: CommitResults["outcomes"]): string {
  const count = (status: TestResultStatus) => outcomes.filter((o) => o.outcome.status === status).length;
  const n = outcomes.length;
  return `Evaluated ${n} development ${n === 1 ? "test" : "tests"}: ${count(TestResultStatus.PASSING)} passing, ${count(TestResultStatus.FAILING)} failing, `
    + `${count(TestResultStatus.SKIPPED)} skipped, ${count(TestResultStatus.ERROR)} with errors`;
}

/**
 * Evaluates a commit: reads its bundle from storage (never running anything from it), stages its
 * datasets, and measures each development test of its project on its dataset. The commit goes
 * `queued` → `running` → `completed`, or `failed` with a message a user can act on when the bundle
 * cannot be read. Run again after a crash, it starts over: its results replace those of the run
 * that died, in one transaction.
 */
export function commitEvaluationHandler(options: CommitEvaluationOptions) {
  return async function runCommitEvaluation(orm: MikroORM, taskResultId: string): Promise<void> {
    const task = await startTask(orm, taskResultId);
    if (!task) return;
    const { projectVersionId } = task.payload as CommitEvaluationPayload;
    const version = await orm.em.fork().findOne(ProjectVersionEntity, { id: projectVersionId });
    if (!version) return completeTask(orm, taskResultId); // The commit was deleted meanwhile.
    const setCommit = (status: EvaluationStatus, message: string) =>
      orm.em.fork().nativeUpdate(ProjectVersionEntity, { id: version.id }, { status: commitStatus(status), statusMessage: message });

    await setCommit(EvaluationStatus.RUNNING, "Reading the bundle");
    const run = await StagedDatasets.use(options.pool, async (stage): Promise<Run> => {
      let bundle: Bundle;
      try {
        const object = await options.objects.open(version.workspaceId, version.storageUri, { maxBytes: options.maxBytes });
        bundle = await readBundle(object.body, async (kind, format, path, bytes) => {
          try {
            await stage.load(kind, format, bytes, options.datasetLimits);
          } catch (err) {
            throw err instanceof ConnectError ? new BundleError(`${path}: ${err.rawMessage}`) : err;
          }
        });
      } catch (err) {
        // A bundle that cannot be read is the commit's failure, not the task's: the task is done.
        if (!(err instanceof BundleError || err instanceof ConnectError)) throw err;
        return { unreadable: err instanceof ConnectError ? err.rawMessage : err.message };
      }
      const columns = datasetColumns(bundle.config);
      await stage.map(columns);
      await setCommit(EvaluationStatus.RUNNING, "Evaluating the development tests");
      const outcomes: CommitResults["outcomes"] = [];
      for (const test of await developmentTests(orm.em.fork(), version.workspaceId, version.projectId)) {
        const kind = test.usesValidationDataset ? "validation" : "training";
        const outcome = bundle.datasets[kind] === undefined
          ? skipped(`The bundle has no ${kind} dataset (${kind}/dataset.csv or ${kind}/dataset.jsonl)`)
          : await evaluateRows(stage.meter(kind), test, options.tools, columns, `${kind} dataset`);
        outcomes.push({ test, outcome });
      }
      return { outcomes };
    });
    if ("unreadable" in run) {
      await setCommit(EvaluationStatus.FAILED, `The bundle at ${version.storageUri} could not be read: ${run.unreadable}`);
      return completeTask(orm, taskResultId);
    }
    // The results and the commit's completion are written together: a crash leaves neither.
    await orm.em.fork().transactional(async (tx) => {
      await recordCommitResults(tx, { workspaceId: version.workspaceId, projectVersionId: version.id, outcomes: run.outcomes });
      await tx.nativeUpdate(ProjectVersionEntity, { id: version.id }, { status: commitStatus(EvaluationStatus.COMPLETED), statusMessage: summary(run.outcomes) });
    });
    options.logger.info({ projectVersionId: version.id, tests: run.outcomes.length }, "commit evaluated");
    await completeTask(orm, taskResultId, { results: run.outcomes.length });
  };
}

/** A commit whose evaluation failed on every attempt ends failed, saying so: nobody polls it forever. */
export async function commitEvaluationGaveUp(orm: MikroORM, taskResultId: string, error: Error): Promise<void> {
  const task = await orm.em.fork().findOne(TaskResultEntity, { id: taskResultId });
  const projectVersionId = (task?.payload as CommitEvaluationPayload | undefined)?.projectVersionId;
  if (!projectVersionId) return;
  await orm.em.fork().nativeUpdate(
    ProjectVersionEntity,
    { id: projectVersionId },
    { status: commitStatus(EvaluationStatus.FAILED), statusMessage: `The evaluation failed on every attempt: ${error.message}` },
  );
}

import type { JsonObject } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import type { MikroORM } from "@mikro-orm/postgresql";
import { EvaluationStatus } from "../../gen/warden/api/v1/common_pb.js";
import { enumName } from "../platform/enums.ts";
import type { Logger } from "../platform/logger.ts";
import type { ObjectStore } from "../storage/object-store.ts";
import { completeTask, startTask } from "../tasks/lifecycle.ts";
import { recordCommitResults } from "../tests/commit-results.ts";
import { BundleError, readBundle } from "./bundle.ts";
import { ProjectVersionEntity } from "./entities.ts";

export const commitEvaluationTaskType = "commits.evaluate";

export interface CommitEvaluationPayload extends JsonObject {
  projectVersionId: string;
}

export interface CommitEvaluationOptions {
  objects: Pick<ObjectStore, "open">;
  /** The largest bundle read. */
  maxBytes: number;
  logger: Logger;
}

const commitStatus = (value: EvaluationStatus) => enumName(EvaluationStatus, value);

/**
 * Evaluates a commit: reads its bundle from storage (never running anything from it), and writes
 * a result for each development test of its project. The commit goes `queued` → `running` →
 * `completed`, or `failed` with a message a user can act on when the bundle cannot be read. Run
 * again after a crash, it starts over: its results replace those of the run that died.
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
    let datasets: { validation: boolean; training: boolean };
    try {
      const object = await options.objects.open(version.workspaceId, version.storageUri, { maxBytes: options.maxBytes });
      const bundle = await readBundle(object.body);
      datasets = { validation: bundle.datasets.validation !== undefined, training: bundle.datasets.training !== undefined };
    } catch (err) {
      // A bundle that cannot be read is the commit's failure, not the task's: the task is done.
      if (!(err instanceof BundleError || err instanceof ConnectError)) throw err;
      const reason = err instanceof ConnectError ? err.rawMessage : err.message;
      await setCommit(EvaluationStatus.FAILED, `The bundle at ${version.storageUri} could not be read: ${reason}`);
      return completeTask(orm, taskResultId);
    }
    const count = await orm.em.fork().transactional((tx) =>
      recordCommitResults(tx, { workspaceId: version.workspaceId, projectId: version.projectId, projectVersionId: version.id, datasets }),
    );
    await setCommit(EvaluationStatus.COMPLETED, `Evaluated: ${count} development ${count === 1 ? "test" : "tests"}, none of them measured by this server yet (each result says why it was skipped)`);
    options.logger.info({ projectVersionId: version.id, tests: count }, "commit evaluated");
    await completeTask(orm, taskResultId, { results: count });
  };
}

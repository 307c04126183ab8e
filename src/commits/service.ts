import { randomUUID } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import { EvaluationStatus } from "../../gen/warden/api/v1/common_pb.js";
import type { CommitService, ProjectVersionSchema } from "../../gen/warden/commits/v1/commits_pb.js";
import { emOf, principalOf } from "../platform/context.ts";
import { enumName, enumValue } from "../platform/enums.ts";
import { invalidArgument } from "../platform/errors.ts";
import { pageOf, paged } from "../platform/pagination.ts";
import { baseUrlOf } from "../platform/urls.ts";
import { optionalText, requireText } from "../platform/validate.ts";
import { requireProject } from "../projects/queries.ts";
import type { TaskQueue } from "../tasks/queue.ts";
import { countResultsOfCommits } from "../tests/queries.ts";
import { commitEvaluationTaskType, type CommitEvaluationPayload } from "./evaluation.ts";
import { ProjectVersionEntity, type ProjectVersion } from "./entities.ts";
import { requireVersion } from "./queries.ts";

export interface CommitServiceOptions {
  publicUrl: string | undefined;
  tasks: Pick<TaskQueue, "enqueue">;
}

export function createCommitService(options: CommitServiceOptions): ServiceImpl<typeof CommitService> {
  return {
    async listProjectVersions(req, ctx) {
      const em = emOf(ctx);
      const project = await requireProject(em, principalOf(ctx), req.projectId);
      const page = pageOf(req);
      const rows = await em.find(
        ProjectVersionEntity,
        { projectId: project.id },
        { orderBy: [{ dateCreated: "desc" }, { id: "desc" }], limit: page.limit + 1, offset: page.offset },
      );
      const { items, nextPage } = paged(rows, page);
      return { items: await versionMessages(em, items, baseUrlOf(ctx.requestHeader, options.publicUrl, ctx.url)), nextPage };
    },

    async createProjectVersion(req, ctx) {
      const em = emOf(ctx);
      const principal = principalOf(ctx);
      const project = await requireProject(em, principal, req.projectId);
      if (!req.commit) throw invalidArgument("commit is required");
      const fileSize = req.commit.fileSize === undefined ? undefined : Number(req.commit.fileSize);
      if (fileSize !== undefined && (!Number.isSafeInteger(fileSize) || fileSize < 0)) {
        throw invalidArgument("commit.fileSize must be a non-negative integer");
      }
      const now = new Date();
      const archived = req.archived ?? false;
      const version = em.create(ProjectVersionEntity, {
        id: randomUUID(),
        projectId: project.id,
        workspaceId: project.workspaceId,
        authorId: principal.userId,
        message: requireText("commit.message", req.commit.message, 10_000),
        storageUri: requireText("storageUri", req.storageUri, 2_000),
        fileSize: fileSize ?? null,
        gitCommitRef: optionalText("commit.gitCommitRef", req.commit.gitCommitRef, 255) ?? null,
        gitCommitSha: optionalText("commit.gitCommitSha", req.commit.gitCommitSha, 255) ?? null,
        gitCommitUrl: optionalText("commit.gitCommitUrl", req.commit.gitCommitUrl, 2_000) ?? null,
        archived,
        dateArchived: archived ? now : null,
        status: enumName(EvaluationStatus, EvaluationStatus.QUEUED),
        statusMessage: "Waiting to be evaluated",
        deploymentStatus: optionalText("deploymentStatus", req.deploymentStatus, 64) ?? "Deployed",
        dateCreated: now,
      });
      // The commit and its evaluation task are written in one flush, then the task is queued
      // (src/commits/evaluation.ts).
      const payload: CommitEvaluationPayload = { projectVersionId: version.id };
      await options.tasks.enqueue(em, project.workspaceId, commitEvaluationTaskType, payload);
      const [message] = await versionMessages(em, [version], baseUrlOf(ctx.requestHeader, options.publicUrl, ctx.url));
      return { projectVersion: message };
    },

    async getProjectVersion(req, ctx) {
      const em = emOf(ctx);
      const version = await requireVersion(em, principalOf(ctx), req.projectVersionId);
      const [message] = await versionMessages(em, [version], baseUrlOf(ctx.requestHeader, options.publicUrl, ctx.url));
      return { projectVersion: message };
    },
  };
}

async function versionMessages(
  em: EntityManager,
  versions: ProjectVersion[],
  baseUrl: string,
): Promise<MessageInitShape<typeof ProjectVersionSchema>[]> {
  const results = await countResultsOfCommits(em, versions.map((v) => v.id));
  return versions.map((version) => {
    const counts = results.get(version.id);
    const dateCreated = timestampFromDate(version.dateCreated);
    return {
      id: version.id,
      projectId: version.projectId,
      dateCreated,
      dateArchived: version.dateArchived ? timestampFromDate(version.dateArchived) : undefined,
      archived: version.archived,
      status: enumValue(EvaluationStatus, version.status),
      statusMessage: version.statusMessage ?? undefined,
      failingGoalCount: counts?.failing ?? 0,
      passingGoalCount: counts?.passing ?? 0,
      totalGoalCount: counts?.total ?? 0,
      deploymentStatus: version.deploymentStatus,
      links: { app: `${baseUrl}/app/projects/${version.projectId}/versions/${version.id}` },
      commit: {
        id: version.id,
        authorId: version.authorId ?? undefined,
        message: version.message,
        storageUri: version.storageUri,
        fileSize: version.fileSize == null ? undefined : BigInt(version.fileSize),
        dateCreated,
        gitCommitRef: version.gitCommitRef ?? undefined,
        gitCommitSha: version.gitCommitSha ?? undefined,
        gitCommitUrl: version.gitCommitUrl ?? undefined,
      },
    };
  });
}

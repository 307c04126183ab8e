import { randomUUID } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import { EvaluationStatus } from "../../gen/warden/api/v1/common_pb.js";
import {
  Expand,
  UpdateInferencePipelineRequestSchema,
  type InferencePipelineSchema,
  type InferencePipelineService,
} from "../../gen/warden/pipelines/v1/pipelines_pb.js";
import { emOf, principalOf } from "../platform/context.ts";
import { enumName, enumValue } from "../platform/enums.ts";
import { invalidArgument, notFound } from "../platform/errors.ts";
import { pageOf, paged } from "../platform/pagination.ts";
import { escapeLike } from "../platform/sql.ts";
import type { Principal } from "../platform/principal.ts";
import { baseUrlOf } from "../platform/urls.ts";
import { fieldsToUpdate } from "../platform/update-mask.ts";
import { optionalText, requireText, requireUuid } from "../platform/validate.ts";
import { requireProject } from "../projects/queries.ts";
import { projectMessageById } from "../projects/service.ts";
import { countLatestResultsOfPipelines } from "../tests/queries.ts";
import { workspaceMessageById } from "../workspaces/service.ts";
import { InferencePipelineEntity, type InferencePipeline } from "./entities.ts";

export interface PipelineServiceOptions {
  publicUrl: string | undefined;
}

export function createInferencePipelineService(options: PipelineServiceOptions): ServiceImpl<typeof InferencePipelineService> {
  return {
    async listInferencePipelines(req, ctx) {
      const em = emOf(ctx);
      const project = await requireProject(em, principalOf(ctx), req.projectId);
      const page = pageOf(req);
      const where: Record<string, unknown> = { projectId: project.id };
      if (req.name !== undefined) where.name = { $ilike: escapeLike(req.name) };
      const rows = await em.find(InferencePipelineEntity, where, {
        orderBy: [{ dateCreated: "desc" }, { id: "desc" }],
        limit: page.limit + 1,
        offset: page.offset,
      });
      const { items, nextPage } = paged(rows, page);
      return { items: await pipelineMessages(em, items, baseUrlOf(ctx.requestHeader, options.publicUrl, ctx.url), []), nextPage };
    },

    async createInferencePipeline(req, ctx) {
      const em = emOf(ctx);
      const project = await requireProject(em, principalOf(ctx), req.projectId);
      const now = new Date();
      const pipeline = em.create(InferencePipelineEntity, {
        id: randomUUID(),
        projectId: project.id,
        workspaceId: project.workspaceId,
        name: requireText("name", req.name, 255),
        description: optionalText("description", req.description, 10_000) ?? null,
        referenceDatasetUri: null,
        // Queued until its tests are first evaluated (src/tests/evaluation/task.ts).
        status: enumName(EvaluationStatus, EvaluationStatus.QUEUED),
        statusMessage: null,
        dateLastEvaluated: null,
        dateLastSampleReceived: null,
        dateOfNextEvaluation: null,
        totalRecordsCount: null,
        dataConfig: null,
        retentionDays: null,
        dateCreated: now,
        dateUpdated: now,
      });
      await em.flush();
      const [message] = await pipelineMessages(em, [pipeline], baseUrlOf(ctx.requestHeader, options.publicUrl, ctx.url), []);
      return { inferencePipeline: message };
    },

    async getInferencePipeline(req, ctx) {
      const em = emOf(ctx);
      const pipeline = await requirePipeline(em, principalOf(ctx), req.inferencePipelineId);
      const [message] = await pipelineMessages(em, [pipeline], baseUrlOf(ctx.requestHeader, options.publicUrl, ctx.url), req.expand);
      return { inferencePipeline: message };
    },

    async updateInferencePipeline(req, ctx) {
      const em = emOf(ctx);
      const pipeline = await requirePipeline(em, principalOf(ctx), req.inferencePipelineId);
      const fields = fieldsToUpdate(UpdateInferencePipelineRequestSchema, req, ["name", "description", "reference_dataset_uri", "retention_days"]);
      if (fields.has("name")) pipeline.name = requireText("name", req.name, 255);
      if (fields.has("description")) pipeline.description = optionalText("description", req.description, 10_000) ?? null;
      if (fields.has("reference_dataset_uri")) {
        pipeline.referenceDatasetUri = optionalText("referenceDatasetUri", req.referenceDatasetUri, 1000) ?? null;
      }
      if (fields.has("retention_days")) {
        if (req.retentionDays !== undefined && req.retentionDays < 1) throw invalidArgument("retentionDays must be at least 1");
        pipeline.retentionDays = req.retentionDays ?? null;
      }
      pipeline.dateUpdated = new Date();
      await em.flush();
      const [message] = await pipelineMessages(em, [pipeline], baseUrlOf(ctx.requestHeader, options.publicUrl, ctx.url), []);
      return { inferencePipeline: message };
    },

    async deleteInferencePipeline(req, ctx) {
      const em = emOf(ctx);
      const pipeline = await requirePipeline(em, principalOf(ctx), req.inferencePipelineId);
      // Its rows go in the background, in batches (src/pipelines/rows/maintenance.ts): one delete
      // of millions of rows would outlast the statement deadline.
      await em.transactional(async (tx) => {
        await tx.nativeDelete(InferencePipelineEntity, { id: pipeline.id });
        await tx.execute("insert into inference_row_purge (pipeline_id) values (?) on conflict do nothing", [pipeline.id]);
      });
      return {};
    },
  };
}

async function requirePipeline(em: EntityManager, principal: Principal, pipelineId: string): Promise<InferencePipeline> {
  const id = requireUuid("inferencePipelineId", pipelineId);
  const pipeline = await em.findOne(InferencePipelineEntity, { id, workspaceId: principal.workspaceId });
  if (!pipeline) throw notFound("Inference pipeline not found");
  return pipeline;
}

async function pipelineMessages(
  em: EntityManager,
  pipelines: InferencePipeline[],
  baseUrl: string,
  expand: Expand[],
): Promise<MessageInitShape<typeof InferencePipelineSchema>[]> {
  const results = await countLatestResultsOfPipelines(em, pipelines.map((p) => p.id));
  const messages: MessageInitShape<typeof InferencePipelineSchema>[] = [];
  for (const pipeline of pipelines) {
    const counts = results.get(pipeline.id);
    const message: MessageInitShape<typeof InferencePipelineSchema> = {
      id: pipeline.id,
      projectId: pipeline.projectId,
      workspaceId: pipeline.workspaceId,
      name: pipeline.name,
      description: pipeline.description ?? undefined,
      dateCreated: timestampFromDate(pipeline.dateCreated),
      dateUpdated: timestampFromDate(pipeline.dateUpdated),
      dateLastEvaluated: optionalTimestamp(pipeline.dateLastEvaluated),
      dateLastSampleReceived: optionalTimestamp(pipeline.dateLastSampleReceived),
      dateOfNextEvaluation: optionalTimestamp(pipeline.dateOfNextEvaluation),
      status: enumValue(EvaluationStatus, pipeline.status),
      statusMessage: pipeline.statusMessage ?? undefined,
      passingGoalCount: counts?.passing ?? 0,
      failingGoalCount: counts?.failing ?? 0,
      totalGoalCount: counts?.total ?? 0,
      totalRecordsCount: pipeline.totalRecordsCount == null ? undefined : BigInt(pipeline.totalRecordsCount),
      links: { app: `${baseUrl}/app/projects/${pipeline.projectId}/inference-pipelines/${pipeline.id}` },
      retentionDays: pipeline.retentionDays ?? undefined,
    };
    if (expand.includes(Expand.PROJECT)) message.project = await projectMessageById(em, pipeline.projectId, baseUrl);
    if (expand.includes(Expand.WORKSPACE)) message.workspace = await workspaceMessageById(em, pipeline.workspaceId);
    messages.push(message);
  }
  return messages;
}

function optionalTimestamp(date: Date | null | undefined) {
  return date ? timestampFromDate(date) : undefined;
}

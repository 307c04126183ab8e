import { randomUUID } from "node:crypto";
import type { ServiceImpl } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import { TestType, type TestService, type UpdateTestsRequest } from "../../gen/warden/tests/v1/tests_pb.js";
import { requireVersion } from "../commits/queries.ts";
import { emOf, principalOf } from "../platform/context.ts";
import { enumName, requireEnum } from "../platform/enums.ts";
import { invalidArgument, notFound } from "../platform/errors.ts";
import { pageOf, paged } from "../platform/pagination.ts";
import { baseUrlOf } from "../platform/urls.ts";
import { optionalText, requireText, requireUuid } from "../platform/validate.ts";
import { pipelineIdsOfProject, pipelineTarget } from "../pipelines/queries.ts";
import { nextTestNumber, requireProject } from "../projects/queries.ts";
import type { TaskQueue } from "../tasks/queue.ts";
import { taskResultPath } from "../tasks/service.ts";
import { bulkUpdateTaskType, maxBulkUpdatePayloads, type BulkUpdatePayload } from "./bulk-update.ts";
import { TestEntity, type Test } from "./entities.ts";
import { windowEvaluationTaskType, type WindowEvaluationPayload } from "./evaluation/task.ts";
import { defaultEvaluationWindow, pipelinesOfTest } from "./evaluation/windows.ts";
import { testMessage } from "./messages.ts";
import { lastUnskippedResult, listResults } from "./results.ts";
import { requireSubtype } from "./catalog.ts";
import { storeThresholds, validateThresholds, withDefaults } from "./thresholds.ts";

/** fairness and robustness exist as list filters only. */
const creatableTypes: readonly TestType[] = [TestType.INTEGRITY, TestType.CONSISTENCY, TestType.PERFORMANCE];

export interface TestServiceOptions {
  publicUrl: string | undefined;
  tasks: TaskQueue;
}

export function createTestService(options: TestServiceOptions): ServiceImpl<typeof TestService> {
  return {
    async createTest(req, ctx) {
      const principal = principalOf(ctx);
      const em = emOf(ctx);
      const project = await requireProject(em, principal, req.projectId);
      const name = requireText("name", req.name, 255);
      const type = requireEnum("type", TestType, req.type);
      if (!creatableTypes.includes(req.type)) throw invalidArgument("type must be one of: integrity, consistency, performance");
      const subtype = requireSubtype(requireText("subtype", req.subtype, 64));
      const thresholds = withDefaults(subtype, req.thresholds);
      validateThresholds("thresholds", thresholds);
      const includePipelines = req.includePipelines.map((id, i) => requireUuid(`includePipelines[${i}]`, id));
      const excludePipelines = req.excludePipelines.map((id, i) => requireUuid(`excludePipelines[${i}]`, id));
      let originProjectVersionId: string | null = null;
      if (req.originProjectVersionId !== undefined) {
        const version = await requireVersion(em, principal, req.originProjectVersionId, "originProjectVersionId");
        if (version.projectId !== project.id) throw notFound("Project version not found");
        originProjectVersionId = version.id;
      }
      const description = optionalText("description", req.description, 10_000) ?? null;
      const evaluationWindow = nonNegative("evaluationWindow", req.evaluationWindow);
      const delayWindow = nonNegative("delayWindow", req.delayWindow);
      // The number is taken by a statement of its own, once the request is known valid, which
      // holds the project's row only while it runs: inside the transaction, the row stayed locked
      // until the commit, and a burst of creates in one project queued behind it past the wait
      // for a pooled connection (503). An insert that then fails (a value PostgreSQL cannot store)
      // leaves a gap in the numbers, as a sequence does.
      const number = await nextTestNumber(em, project.id);
      const test = await em.transactional(async (tx) => {
        const now = new Date();
        const archived = req.archived ?? false;
        const created = tx.create(TestEntity, {
          id: randomUUID(),
          projectId: project.id,
          workspaceId: project.workspaceId,
          number,
          name,
          description,
          type,
          subtype,
          thresholds: storeThresholds(thresholds),
          archived,
          suggested: false,
          usesMlModel: req.usesMlModel ?? false,
          usesTrainingDataset: req.usesTrainingDataset ?? false,
          usesValidationDataset: req.usesValidationDataset ?? false,
          usesReferenceDataset: req.usesReferenceDataset ?? false,
          usesProductionData: req.usesProductionData ?? false,
          evaluationWindow,
          delayWindow,
          defaultToAllPipelines: req.defaultToAllPipelines ?? null,
          includePipelines: includePipelines.length ? includePipelines : null,
          excludePipelines: excludePipelines.length ? excludePipelines : null,
          includeHistoricalData: req.includeHistoricalData ?? null,
          commentCount: 0,
          creatorId: principal.userId,
          originProjectVersionId,
          dateCreated: now,
          dateUpdated: now,
          dateArchived: archived ? now : null,
        });
        return created;
      });
      return { test: testMessage(test) };
    },

    async listTests(req, ctx) {
      const em = emOf(ctx);
      const project = await requireProject(em, principalOf(ctx), req.projectId);
      const page = pageOf(req);
      const where: Record<string, unknown> = { projectId: project.id, suggested: req.suggested ?? false };
      if (!req.includeArchived) where.archived = false;
      if (req.originVersionId !== undefined) {
        where.originProjectVersionId = requireUuid("originVersionId", req.originVersionId);
      }
      if (req.type !== undefined) where.type = enumName(TestType, req.type);
      if (req.usesProductionData !== undefined) where.usesProductionData = req.usesProductionData;
      const rows = await em.find(TestEntity, where, {
        orderBy: { number: "asc" },
        limit: page.limit + 1,
        offset: page.offset,
      });
      const { items, nextPage } = paged(rows, page);
      return { items: items.map(testMessage), nextPage };
    },

    async updateTests(req, ctx) {
      const principal = principalOf(ctx);
      const em = emOf(ctx);
      const payloads = validateBulkUpdate(req);
      const project = await requireProject(em, principal, req.projectId);
      const payload: BulkUpdatePayload = { projectId: project.id, payloads };
      const taskResultId = await options.tasks.enqueue(em, principal.workspaceId, bulkUpdateTaskType, payload);
      return {
        taskHandle: {
          taskResultId,
          taskResultUrl: baseUrlOf(ctx.requestHeader, options.publicUrl, ctx.url) + taskResultPath(taskResultId),
        },
      };
    },

    async listTestResults(req, ctx) {
      const em = emOf(ctx);
      const principal = principalOf(ctx);
      const version = await requireVersion(em, principal, req.projectVersionId);
      return listResults(em, {
        of: { projectVersionId: version.id },
        workspaceId: principal.workspaceId,
        tests: { projectId: version.projectId, includeArchived: req.includeArchived ?? false, types: req.type },
        statuses: req.status,
      }, pageOf(req));
    },

    async listPipelineTestResults(req, ctx) {
      const em = emOf(ctx);
      const principal = principalOf(ctx);
      const pipeline = await pipelineTarget(em, requireUuid("inferencePipelineId", req.inferencePipelineId), principal.workspaceId);
      return listResults(em, {
        of: { inferencePipelineId: pipeline.id },
        workspaceId: principal.workspaceId,
        tests: { projectId: pipeline.projectId, includeArchived: req.includeArchived ?? false, types: req.type },
        statuses: req.status,
        start: req.startTimestamp,
        end: req.endTimestamp,
      }, pageOf(req));
    },

    async evaluateTest(req, ctx) {
      const em = emOf(ctx);
      const principal = principalOf(ctx);
      const test = await em.findOne(TestEntity, { id: requireUuid("testId", req.testId), workspaceId: principal.workspaceId });
      if (!test) throw notFound("Test not found");
      if (!test.usesProductionData) {
        throw invalidArgument("Only monitoring tests (usesProductionData) are evaluated on inference pipelines; development tests are evaluated on commits");
      }
      const windowSeconds = test.evaluationWindow || defaultEvaluationWindow;
      const starts = windowStarts(req.startTimestamp, req.endTimestamp, windowSeconds);
      const pipelines = await pipelinesToEvaluate(em, test, req.inferencePipelineId);
      const baseUrl = baseUrlOf(ctx.requestHeader, options.publicUrl, ctx.url);
      const tasks = [];
      for (const pipelineId of pipelines) {
        const payload: WindowEvaluationPayload = { testId: test.id, pipelineId, windowSeconds, starts, overwrite: req.overwriteResults ?? false };
        const taskResultId = await options.tasks.enqueue(em, principal.workspaceId, windowEvaluationTaskType, payload);
        tasks.push({ taskResultId, taskResultUrl: baseUrl + taskResultPath(taskResultId), pipelineId });
      }
      return {
        message: "Evaluation task queued successfully",
        pipelineCount: pipelines.length,
        requestedStartTimestamp: req.startTimestamp,
        requestedEndTimestamp: req.endTimestamp,
        tasks,
      };
    },

    async listResultsOfTest(req, ctx) {
      const em = emOf(ctx);
      const principal = principalOf(ctx);
      const test = await em.findOne(TestEntity, { id: requireUuid("testId", req.testId), workspaceId: principal.workspaceId });
      if (!test) throw notFound("Test not found");
      const page = await listResults(em, {
        of: { testId: test.id },
        workspaceId: principal.workspaceId,
        // The test was asked for by its ID: its results are listed, archived or not.
        tests: { ids: [test.id], includeArchived: true, types: [] },
        statuses: req.status,
        start: req.startTimestamp,
        end: req.endTimestamp,
        inferencePipelineId: req.inferencePipelineId === undefined ? undefined : requireUuid("inferencePipelineId", req.inferencePipelineId),
        projectVersionId: req.projectVersionId === undefined ? undefined : requireUuid("projectVersionId", req.projectVersionId),
      }, pageOf(req));
      return { ...page, lastUnskippedResult: await lastUnskippedResult(em, test) };
    },
  };
}

/** Windows one evaluate call may ask for: a year of hourly windows is 8,760. */
const maxWindows = 10_000;

/** The starts of the windows that overlap [start, end), aligned to multiples of `windowSeconds` since the epoch. */
function windowStarts(start: bigint, end: bigint, windowSeconds: number): number[] {
  if (start >= end) throw invalidArgument("startTimestamp must be before endTimestamp");
  if (start < 0n || end > 253_402_300_800n) throw invalidArgument("startTimestamp and endTimestamp must be UNIX seconds from 1970 to 9999");
  const first = (start / BigInt(windowSeconds)) * BigInt(windowSeconds);
  const count = (end - first + BigInt(windowSeconds) - 1n) / BigInt(windowSeconds);
  if (count > BigInt(maxWindows)) throw invalidArgument(`The range holds ${count} windows of ${windowSeconds} s; ask for at most ${maxWindows} at once`);
  return Array.from({ length: Number(count) }, (_, i) => Number(first) + i * windowSeconds);
}

/** The pipelines a monitoring test applies to, or the one asked for, which must be of its project. */
async function pipelinesToEvaluate(em: EntityManager, test: Test, only: string | undefined): Promise<string[]> {
  const all = await pipelineIdsOfProject(em, test.projectId);
  if (only === undefined) return pipelinesOfTest(test, all);
  const id = requireUuid("inferencePipelineId", only);
  if (!all.includes(id)) throw notFound("Inference pipeline not found");
  return [id];
}

/** Everything about a bulk update that can be checked before it is queued. */
function validateBulkUpdate(req: UpdateTestsRequest): BulkUpdatePayload["payloads"] {
  if (req.payloads.length === 0) throw invalidArgument("payloads must hold at least one item");
  if (req.payloads.length > maxBulkUpdatePayloads) {
    throw invalidArgument(`payloads may hold at most ${maxBulkUpdatePayloads} items`);
  }
  const seen = new Set<string>();
  return req.payloads.map((item, i) => {
    const id = requireUuid(`payloads[${i}].id`, item.id);
    if (seen.has(id)) throw invalidArgument(`payloads[${i}].id ${id} is given more than once`);
    seen.add(id);
    if (item.suggested === true) throw invalidArgument(`payloads[${i}].suggested may only be false`);
    validateThresholds(`payloads[${i}].thresholds`, item.thresholds);
    return {
      id,
      name: item.name === undefined ? undefined : requireText(`payloads[${i}].name`, item.name, 255),
      description: optionalText(`payloads[${i}].description`, item.description, 10_000),
      archived: item.archived,
      suggested: item.suggested,
      // An absent list and an empty one look the same in proto3: only a non-empty list replaces.
      thresholds: item.thresholds.length ? storeThresholds(item.thresholds) : undefined,
    };
  });
}

function nonNegative(field: string, value: number | undefined): number | null {
  if (value === undefined) return null;
  if (value < 0) throw invalidArgument(`${field} must not be negative`);
  return value;
}


import { randomUUID } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate, type ListValue } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  ProjectSource,
  TaskType,
  UpdateProjectRequestSchema,
  type ProjectSchema,
  type ProjectService,
} from "../../gen/warden/projects/v1/projects_pb.js";
import { countVersionsByProject } from "../commits/queries.ts";
import { countPipelinesByProject } from "../pipelines/queries.ts";
import { emOf, principalOf } from "../platform/context.ts";
import { enumName, enumValue, requireEnum } from "../platform/enums.ts";
import { alreadyExists, invalidArgument } from "../platform/errors.ts";
import { pageOf, paged } from "../platform/pagination.ts";
import { escapeLike } from "../platform/sql.ts";
import { fieldsToUpdate } from "../platform/update-mask.ts";
import { baseUrlOf } from "../platform/urls.ts";
import { optionalText, requireText } from "../platform/validate.ts";
import { countTestsByProject } from "../tests/queries.ts";
import { ProjectEntity, type Project } from "./entities.ts";
import { requireProject } from "./queries.ts";

const updatableProjectFields = ["name", "description", "purpose", "model_types", "model_developer", "data_retention_days"];

export interface ProjectServiceOptions {
  publicUrl: string | undefined;
}

export function createProjectService(options: ProjectServiceOptions): ServiceImpl<typeof ProjectService> {
  return {
    async listProjects(req, ctx) {
      const em = emOf(ctx);
      const principal = principalOf(ctx);
      const page = pageOf(req);
      const where: Record<string, unknown> = { workspaceId: principal.workspaceId };
      if (req.name !== undefined) where.name = { $ilike: escapeLike(req.name) };
      if (req.taskType !== undefined) where.taskType = enumName(TaskType, req.taskType);
      const rows = await em.find(ProjectEntity, where, {
        orderBy: [{ dateCreated: "desc" }, { id: "desc" }],
        limit: page.limit + 1,
        offset: page.offset,
      });
      const { items, nextPage } = paged(rows, page);
      return { items: await projectMessages(em, items, baseUrlOf(ctx.requestHeader, options.publicUrl, ctx.url)), nextPage };
    },

    async createProject(req, ctx) {
      const em = emOf(ctx);
      const principal = principalOf(ctx);
      const name = requireText("name", req.name, 255);
      const taskType = requireEnum("taskType", TaskType, req.taskType);
      await assertNameFree(em, principal.workspaceId, name);
      const now = new Date();
      const project = em.create(ProjectEntity, {
        id: randomUUID(),
        workspaceId: principal.workspaceId,
        creatorId: principal.userId,
        name,
        description: optionalText("description", req.description, 10_000) ?? null,
        source: enumName(ProjectSource, ProjectSource.API),
        taskType,
        purpose: optionalText("purpose", req.purpose, 10_000) ?? null,
        modelTypes: req.modelTypes.map((type, i) => requireText(`modelTypes[${i}]`, type, 255)),
        modelDeveloper: optionalText("modelDeveloper", req.modelDeveloper, 255) ?? null,
        dataRetentionDays: retentionDays(req.dataRetentionDays),
        testSeq: 0,
        dateCreated: now,
        dateUpdated: now,
      });
      await em.flush();
      const [message] = await projectMessages(em, [project], baseUrlOf(ctx.requestHeader, options.publicUrl, ctx.url));
      return { project: message };
    },

    async updateProject(req, ctx) {
      const em = emOf(ctx);
      const principal = principalOf(ctx);
      const project = await requireProject(em, principal, req.projectId);
      const fields = fieldsToUpdate(UpdateProjectRequestSchema, req, updatableProjectFields);
      if (fields.has("name")) {
        const name = requireText("name", req.name, 255);
        if (name !== project.name) await assertNameFree(em, principal.workspaceId, name);
        project.name = name;
      }
      if (fields.has("description")) project.description = optionalText("description", req.description, 10_000) ?? null;
      if (fields.has("purpose")) project.purpose = optionalText("purpose", req.purpose, 10_000) ?? null;
      if (fields.has("model_types")) project.modelTypes = req.modelTypes ? modelTypesOf(req.modelTypes) : [];
      if (fields.has("model_developer")) project.modelDeveloper = optionalText("modelDeveloper", req.modelDeveloper, 255) ?? null;
      if (fields.has("data_retention_days")) project.dataRetentionDays = retentionDays(req.dataRetentionDays);
      project.dateUpdated = new Date();
      await em.flush();
      const [message] = await projectMessages(em, [project], baseUrlOf(ctx.requestHeader, options.publicUrl, ctx.url));
      return { project: message };
    },

    async deleteProject(req, ctx) {
      const em = emOf(ctx);
      const project = await requireProject(em, principalOf(ctx), req.projectId);
      // Commits, tests, results and pipelines go with it (ON DELETE CASCADE).
      await em.nativeDelete(ProjectEntity, { id: project.id });
      return {};
    },
  };
}

async function assertNameFree(em: EntityManager, workspaceId: string, name: string): Promise<void> {
  if (await em.count(ProjectEntity, { workspaceId, name })) {
    throw alreadyExists(`A project named "${name}" already exists in this workspace`);
  }
}

function retentionDays(value: number | undefined): number | null {
  if (value === undefined) return null;
  if (value < 1) throw invalidArgument("dataRetentionDays must be at least 1");
  return value;
}

function modelTypesOf(list: ListValue): string[] {
  return list.values.map((value, i) => {
    if (value.kind.case !== "stringValue") throw invalidArgument(`modelTypes[${i}] must be a string`);
    return requireText(`modelTypes[${i}]`, value.kind.value, 255);
  });
}

/** A project as the contract shapes it, by ID: for other contexts that expand one (pipelines). */
export async function projectMessageById(em: EntityManager, projectId: string, baseUrl: string): Promise<MessageInitShape<typeof ProjectSchema> | undefined> {
  const project = await em.findOne(ProjectEntity, { id: projectId });
  return project ? (await projectMessages(em, [project], baseUrl))[0] : undefined;
}

async function projectMessages(em: EntityManager, projects: Project[], baseUrl: string): Promise<MessageInitShape<typeof ProjectSchema>[]> {
  const ids = projects.map((p) => p.id);
  const [versions, pipelines, tests] = await Promise.all([
    countVersionsByProject(em, ids),
    countPipelinesByProject(em, ids),
    countTestsByProject(em, ids),
  ]);
  return projects.map((project) => {
    const goals = tests.get(project.id);
    return {
      id: project.id,
      workspaceId: project.workspaceId,
      creatorId: project.creatorId ?? undefined,
      dateCreated: timestampFromDate(project.dateCreated),
      dateUpdated: timestampFromDate(project.dateUpdated),
      name: project.name,
      description: project.description ?? undefined,
      source: project.source ? enumValue(ProjectSource, project.source) : undefined,
      taskType: enumValue(TaskType, project.taskType),
      versionCount: versions.get(project.id) ?? 0,
      inferencePipelineCount: pipelines.get(project.id) ?? 0,
      goalCount: goals?.goal ?? 0,
      developmentGoalCount: goals?.development ?? 0,
      monitoringGoalCount: goals?.monitoring ?? 0,
      links: { app: `${baseUrl}/app/projects/${project.id}` },
      purpose: project.purpose ?? undefined,
      modelTypes: project.modelTypes,
      modelDeveloper: project.modelDeveloper ?? undefined,
      dataRetentionDays: project.dataRetentionDays ?? undefined,
    };
  });
}

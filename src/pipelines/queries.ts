import { Code, ConnectError } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import { countsBy } from "../platform/counts.ts";
import { invalidArgument, notFound } from "../platform/errors.ts";
import { requireUuid } from "../platform/validate.ts";
import { projectSummary } from "../projects/queries.ts";
import { InferencePipelineEntity } from "./entities.ts";
import type { TaskTypeName } from "./rows/config.ts";

/** Inference pipeline counts per project. */
export async function countPipelinesByProject(em: EntityManager, projectIds: readonly string[]): Promise<Map<string, number>> {
  const counts = await countsBy(em, "inference_pipeline", "project_id", projectIds, { n: "count(*)" });
  return new Map([...counts].map(([id, c]) => [id, c.n]));
}

/**
 * For the gateway's control plane, binding a key or a workspace to a pipeline that its traffic is
 * written to: the pipeline must be in `workspaceId` (else 404, as for any resource of another
 * workspace) and belong to an llm-base project (else 400: gateway traffic makes LLM rows).
 * `field` names the caller's field in the messages. Returns the pipeline's ID.
 */
export async function requireLlmPipeline(em: EntityManager, workspaceId: string, pipelineId: string, field: string): Promise<string> {
  const id = requireUuid(field, pipelineId);
  const target = await pipelineTarget(em, id, workspaceId).catch((err: unknown) => {
    throw err instanceof ConnectError && err.code === Code.NotFound ? notFound(`${field} names no inference pipeline of this workspace`) : err;
  });
  if (target.taskType !== "llm-base") {
    throw invalidArgument(`${field} must name a pipeline of an llm-base project: gateway requests are written as LLM rows`);
  }
  return target.id;
}

/** A pipeline rows may be written to, with what decides their config: its project's task type. */
export interface PipelineTarget {
  id: string;
  workspaceId: string;
  projectId: string;
  taskType: TaskTypeName;
}

/**
 * Projects' task types, which never change (no update sets one): rows in ask for their pipeline's
 * on every batch, and need not ask the database each time. Bounded: cleared when full.
 */
const taskTypes = new Map<string, TaskTypeName>();
const MAX_CACHED_TASK_TYPES = 10_000;

async function taskTypeOf(em: EntityManager, projectId: string): Promise<TaskTypeName | undefined> {
  const cached = taskTypes.get(projectId);
  if (cached) return cached;
  const project = await projectSummary(em, projectId);
  if (!project) return undefined;
  // Stored by enum name (LLM_BASE); configs are told apart by the contract's spelling (llm-base).
  const taskType = project.taskType.toLowerCase().replaceAll("_", "-") as TaskTypeName;
  if (taskTypes.size >= MAX_CACHED_TASK_TYPES) taskTypes.clear();
  taskTypes.set(projectId, taskType);
  return taskType;
}

/** The pipeline and its project's task type, or 404. `workspaceId` limits the search to one workspace. */
export async function pipelineTarget(em: EntityManager, pipelineId: string, workspaceId?: string): Promise<PipelineTarget> {
  const where = workspaceId === undefined ? { id: pipelineId } : { id: pipelineId, workspaceId };
  const pipeline = await em.findOne(InferencePipelineEntity, where, { fields: ["id", "workspaceId", "projectId"] });
  const taskType = pipeline ? await taskTypeOf(em, pipeline.projectId) : undefined;
  if (!pipeline || !taskType) throw notFound("Inference pipeline not found");
  return { id: pipeline.id, workspaceId: pipeline.workspaceId, projectId: pipeline.projectId, taskType };
}

/** The IDs of a project's pipelines, oldest first. */
export async function pipelineIdsOfProject(em: EntityManager, projectId: string): Promise<string[]> {
  const pipelines = await em.find(InferencePipelineEntity, { projectId }, { fields: ["id"], orderBy: { dateCreated: "asc", id: "asc" } });
  return pipelines.map((p) => p.id);
}

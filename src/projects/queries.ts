import type { EntityManager } from "@mikro-orm/postgresql";
import { notFound } from "../platform/errors.ts";
import type { Principal } from "../platform/principal.ts";
import { requireUuid } from "../platform/validate.ts";
import { ProjectEntity, type Project } from "./entities.ts";

/** What other contexts may ask of projects. */

export function countProjectsInWorkspace(em: EntityManager, workspaceId: string): Promise<number> {
  return em.count(ProjectEntity, { workspaceId });
}

/** The project, if it is in the caller's workspace; any other is "not found". */
export async function requireProject(em: EntityManager, principal: Principal, projectId: string): Promise<Project> {
  const id = requireUuid("projectId", projectId);
  const project = await em.findOne(ProjectEntity, { id, workspaceId: principal.workspaceId });
  if (!project) throw notFound("Project not found");
  return project;
}

/**
 * Takes the next test number of a project. The row lock makes concurrent creations queue up
 * here, so numbers are unique and gapless per project. Call it inside the creating transaction.
 */
export async function nextTestNumber(em: EntityManager, projectId: string): Promise<number> {
  const rows = await em.execute<{ test_seq: number }[]>(
    "update project set test_seq = test_seq + 1 where id = ? returning test_seq",
    [projectId],
  );
  const row = rows[0];
  if (!row) throw notFound("Project not found");
  return row.test_seq;
}

export interface ProjectSummary {
  id: string;
  workspaceId: string;
  name: string;
  description?: string | null;
  taskType: string;
  dateCreated: Date;
  dateUpdated: Date;
}

export async function projectSummary(em: EntityManager, projectId: string): Promise<ProjectSummary | null> {
  return em.findOne(ProjectEntity, { id: projectId }, {
    fields: ["id", "workspaceId", "name", "description", "taskType", "dateCreated", "dateUpdated"],
  });
}

/** Each project's dataRetentionDays, where set: the default retention of its pipelines' rows. */
export async function projectRetentionDays(em: EntityManager, projectIds: readonly string[]): Promise<Map<string, number>> {
  if (projectIds.length === 0) return new Map();
  const projects = await em.find(ProjectEntity, { id: { $in: [...projectIds] }, dataRetentionDays: { $ne: null } }, { fields: ["id", "dataRetentionDays"] });
  return new Map(projects.map((project) => [project.id, project.dataRetentionDays as number]));
}

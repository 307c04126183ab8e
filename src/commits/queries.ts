import type { EntityManager } from "@mikro-orm/postgresql";
import { countsBy } from "../platform/counts.ts";
import { notFound } from "../platform/errors.ts";
import type { Principal } from "../platform/principal.ts";
import { requireUuid } from "../platform/validate.ts";
import { ProjectVersionEntity, type ProjectVersion } from "./entities.ts";

/** Commit counts per project. */
export async function countVersionsByProject(em: EntityManager, projectIds: readonly string[]): Promise<Map<string, number>> {
  const counts = await countsBy(em, "project_version", "project_id", projectIds, { n: "count(*)" });
  return new Map([...counts].map(([id, c]) => [id, c.n]));
}

/** The commit, if it is in the caller's workspace; any other is "not found". */
export async function requireVersion(em: EntityManager, principal: Principal, versionId: string, field = "projectVersionId"): Promise<ProjectVersion> {
  const id = requireUuid(field, versionId);
  const version = await em.findOne(ProjectVersionEntity, { id, workspaceId: principal.workspaceId });
  if (!version) throw notFound("Project version not found");
  return version;
}

import type { EntityManager } from "@mikro-orm/postgresql";
import { WorkspaceEntity } from "./entities.ts";

/** What other contexts may ask of workspaces. */

export interface WorkspaceSummary {
  id: string;
  name: string;
  slug: string;
  dateCreated: Date;
  dateUpdated: Date;
}

export function workspaceSummary(em: EntityManager, workspaceId: string): Promise<WorkspaceSummary | null> {
  return em.findOne(WorkspaceEntity, { id: workspaceId }, { fields: ["id", "name", "slug", "dateCreated", "dateUpdated"] });
}

import type { EntityManager } from "@mikro-orm/postgresql";
import { WorkspaceEntity } from "./entities.ts";

/** What other contexts may ask of workspaces. */

/**
 * Whether this is the workspace the first start created (the oldest), whose admins operate the
 * instance: settings shared by every workspace, such as the gateway's in-flight cap, are theirs
 * to change, so that no tenant can throttle the others. Found by age, as its slug can change.
 */
export async function isInstanceWorkspace(em: EntityManager, workspaceId: string): Promise<boolean> {
  const [first] = await em.find(WorkspaceEntity, {}, { fields: ["id"], orderBy: { dateCreated: "asc", id: "asc" }, limit: 1 });
  return first?.id === workspaceId;
}

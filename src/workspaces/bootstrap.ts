import { randomBytes, randomUUID } from "node:crypto";
import type { EntityManager, MikroORM } from "@mikro-orm/postgresql";
import { ApiKeyEntity, MemberEntity, UserEntity, WorkspaceEntity } from "./entities.ts";
import { generateManagementKey, hashKey } from "./keys.ts";

export interface BootstrapResult {
  /** The admin key, when this start made one up; it is shown once and never again. */
  generatedAdminKey: string | undefined;
  workspaceId: string;
}

/** Serialises bootstraps of processes that start together against one database. */
const bootstrapLockId = 7_230_001;

/**
 * The first start on an empty database creates the default workspace, its admin user and an
 * admin API key. `adminKey`, when given, is that key, and is added again if it went missing.
 */
export async function bootstrap(orm: MikroORM, adminKey: string | undefined): Promise<BootstrapResult> {
  return orm.em.fork().transactional(async (em) => {
    await em.execute(`select pg_advisory_xact_lock(${bootstrapLockId})`);
    const [existing] = await em.find(WorkspaceEntity, {}, { orderBy: { dateCreated: "asc" }, limit: 1 });
    if (existing) {
      if (adminKey && !(await em.findOne(ApiKeyEntity, { keyHash: hashKey(adminKey) }))) {
        addAdminKey(em, existing.id, existing.creatorId ?? null, adminKey);
      }
      return { generatedAdminKey: undefined, workspaceId: existing.id };
    }
    const now = new Date();
    const user = em.create(UserEntity, {
      id: randomUUID(),
      email: "admin@warden.local",
      name: "Administrator",
      username: "admin",
      dateCreated: now,
    });
    const workspace = em.create(WorkspaceEntity, {
      id: randomUUID(),
      creatorId: user.id,
      name: "Default",
      slug: "default",
      inviteCode: randomBytes(12).toString("base64url"),
      status: "ACTIVE",
      samlOnlyAccess: false,
      wildcardDomains: [],
      periodStartDate: null,
      periodEndDate: null,
      dateCreated: now,
      dateUpdated: now,
    });
    em.create(MemberEntity, { workspaceId: workspace.id, userId: user.id, role: "ADMIN", dateCreated: now });
    const secret = adminKey ?? generateManagementKey();
    addAdminKey(em, workspace.id, user.id, secret);
    await em.flush();
    return { generatedAdminKey: adminKey ? undefined : secret, workspaceId: workspace.id };
  });
}

function addAdminKey(em: EntityManager, workspaceId: string, userId: string | null, secret: string): void {
  const now = new Date();
  em.create(ApiKeyEntity, {
    id: randomUUID(),
    workspaceId,
    userId,
    name: "admin",
    role: "ADMIN",
    keyHash: hashKey(secret),
    dateCreated: now,
    dateUpdated: now,
    dateLastUsed: null,
    dateRevoked: null,
  });
}

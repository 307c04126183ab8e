import { randomBytes, randomUUID } from "node:crypto";
import type { EntityManager, MikroORM } from "@mikro-orm/postgresql";
import { ApiKeyEntity, MemberEntity, UserEntity, WorkspaceEntity } from "./entities.ts";
import { generateManagementKey, hashKey } from "./keys.ts";

export interface BootstrapResult {
  /** The admin key, when this start made one up; it is shown once and never again. */
  generatedAdminKey: string | undefined;
  workspaceId: string;
}

export interface NewWorkspace {
  workspaceId: string;
  userId: string;
  apiKeyId: string;
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
    const secret = adminKey ?? generateManagementKey();
    const created = createWorkspace(em, { name: "Default", slug: "default", adminEmail: "admin@warden.local", adminKey: secret });
    return { generatedAdminKey: adminKey ? undefined : secret, workspaceId: created.workspaceId };
  });
}

/**
 * A workspace with its first member, an admin user, and an ADMIN API key for them. The caller
 * flushes. (No RPC creates workspaces yet; the bootstrap and the tests do.)
 */
export function createWorkspace(
  em: EntityManager,
  options: { name: string; slug: string; adminEmail: string; adminKey: string },
): NewWorkspace {
  const now = new Date();
  const user = em.create(UserEntity, {
    id: randomUUID(),
    email: options.adminEmail,
    name: "Administrator",
    username: "admin",
    dateCreated: now,
  });
  const workspace = em.create(WorkspaceEntity, {
    id: randomUUID(),
    creatorId: user.id,
    name: options.name,
    slug: options.slug,
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
  const apiKeyId = addAdminKey(em, workspace.id, user.id, options.adminKey);
  return { workspaceId: workspace.id, userId: user.id, apiKeyId };
}

function addAdminKey(em: EntityManager, workspaceId: string, userId: string | null, secret: string): string {
  const now = new Date();
  const key = em.create(ApiKeyEntity, {
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
  return key.id;
}

import { defineEntity, p, type InferEntity } from "@mikro-orm/core";

export const UserEntity = defineEntity({
  name: "User",
  tableName: "app_user",
  properties: {
    id: p.uuid().primary(),
    email: p.string().length(254),
    name: p.string().length(120).nullable(),
    username: p.string().length(64).nullable(),
    dateCreated: p.datetime(),
  },
});
export type User = InferEntity<typeof UserEntity>;

export const WorkspaceEntity = defineEntity({
  name: "Workspace",
  tableName: "workspace",
  properties: {
    id: p.uuid().primary(),
    creatorId: p.uuid().nullable(),
    name: p.string().length(80),
    slug: p.string().length(32),
    inviteCode: p.string().length(64),
    status: p.string().length(32),
    samlOnlyAccess: p.boolean(),
    wildcardDomains: p.array(),
    periodStartDate: p.datetime().nullable(),
    periodEndDate: p.datetime().nullable(),
    dateCreated: p.datetime(),
    dateUpdated: p.datetime(),
  },
});
export type Workspace = InferEntity<typeof WorkspaceEntity>;

export const MemberEntity = defineEntity({
  name: "Member",
  tableName: "workspace_member",
  properties: {
    workspaceId: p.uuid().primary(),
    userId: p.uuid().primary(),
    role: p.string().length(16),
    dateCreated: p.datetime(),
  },
});
export type Member = InferEntity<typeof MemberEntity>;

export const ApiKeyEntity = defineEntity({
  name: "ApiKey",
  tableName: "api_key",
  properties: {
    id: p.uuid().primary(),
    workspaceId: p.uuid(),
    userId: p.uuid().nullable(),
    name: p.string().length(120).nullable(),
    role: p.string().length(16),
    /** SHA-256 of the whole secret, hex. The secret itself is never stored. */
    keyHash: p.string().length(64),
    dateCreated: p.datetime(),
    dateUpdated: p.datetime(),
    dateLastUsed: p.datetime().nullable(),
    dateRevoked: p.datetime().nullable(),
  },
});
export type ApiKey = InferEntity<typeof ApiKeyEntity>;

export const InviteEntity = defineEntity({
  name: "Invite",
  tableName: "invite",
  properties: {
    id: p.uuid().primary(),
    workspaceId: p.uuid(),
    creatorId: p.uuid(),
    creatorName: p.string().length(120).nullable(),
    email: p.string().length(120),
    role: p.string().length(16),
    status: p.string().length(16),
    dateCreated: p.datetime(),
  },
});
export type Invite = InferEntity<typeof InviteEntity>;

export const workspaceEntities = [UserEntity, WorkspaceEntity, MemberEntity, ApiKeyEntity, InviteEntity];

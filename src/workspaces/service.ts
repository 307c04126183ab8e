import { randomUUID } from "node:crypto";
import type { ServiceImpl } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { EntityManager } from "@mikro-orm/postgresql";
import { Role } from "../../gen/warden/api/v1/common_pb.js";
import {
  InviteStatus,
  WorkspaceStatus,
  type InviteSchema,
  type WorkspaceSchema,
  type WorkspaceService,
} from "../../gen/warden/workspaces/v1/workspaces_pb.js";
import { emOf, principalOf } from "../platform/context.ts";
import { enumName, enumValue } from "../platform/enums.ts";
import { alreadyExists, invalidArgument, notFound, permissionDenied } from "../platform/errors.ts";
import { pageOf, paged } from "../platform/pagination.ts";
import { roleRank, type Principal } from "../platform/principal.ts";
import { requireEmail, requireText, requireUuid } from "../platform/validate.ts";
import { countProjectsInWorkspace } from "../projects/queries.ts";
import { ApiKeyEntity, InviteEntity, MemberEntity, WorkspaceEntity, type Invite, type Workspace } from "./entities.ts";
import { generateManagementKey, hashKey } from "./keys.ts";

const slugPattern = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const maxInvitesPerCall = 100;

export function createWorkspaceService(): ServiceImpl<typeof WorkspaceService> {
  return {
    async whoAmI(_req, ctx) {
      const em = emOf(ctx);
      const principal = principalOf(ctx);
      const [workspace, key] = await Promise.all([
        em.findOne(WorkspaceEntity, { id: principal.workspaceId }),
        principal.apiKeyId ? em.findOne(ApiKeyEntity, { id: principal.apiKeyId }) : null,
      ]);
      // Only a workspace deleted while its key was checked gets here.
      if (!workspace) throw notFound("Workspace not found");
      return {
        workspaceId: workspace.id,
        workspaceName: workspace.name,
        workspaceSlug: workspace.slug,
        role: principal.role,
        apiKeyId: principal.apiKeyId ?? undefined,
        apiKeyName: key?.name ?? undefined,
        userId: principal.userId ?? undefined,
      };
    },

    async getWorkspace(req, ctx) {
      const em = emOf(ctx);
      const workspace = await ownWorkspace(em, principalOf(ctx), req.workspaceId);
      return { workspace: await workspaceMessage(em, workspace) };
    },

    async updateWorkspace(req, ctx) {
      const em = emOf(ctx);
      const workspace = await ownWorkspace(em, principalOf(ctx), req.workspaceId);
      if (req.name !== undefined) workspace.name = requireText("name", req.name, 80);
      if (req.slug !== undefined) {
        const slug = requireText("slug", req.slug, 32);
        if (!slugPattern.test(slug)) {
          throw invalidArgument("slug must be lower-case letters and digits, in words joined by single hyphens");
        }
        const taken = await em.count(WorkspaceEntity, { slug, id: { $ne: workspace.id } });
        if (taken > 0) throw alreadyExists(`The slug "${slug}" is already taken`);
        workspace.slug = slug;
      }
      if (req.inviteCode !== undefined) workspace.inviteCode = requireText("inviteCode", req.inviteCode, 64);
      workspace.dateUpdated = new Date();
      await em.flush();
      return { workspace: await workspaceMessage(em, workspace) };
    },

    async createApiKey(req, ctx) {
      const em = emOf(ctx);
      const principal = principalOf(ctx);
      const workspace = await ownWorkspace(em, principal, req.workspaceId);
      const role = req.role === Role.UNSPECIFIED ? Role.MEMBER : req.role;
      if (roleRank(role) > roleRank(principal.role)) {
        throw permissionDenied(`A ${Role[principal.role]} key cannot create a ${Role[role]} key`);
      }
      const name = req.name === undefined ? null : req.name.trim() || null;
      if (name && name.length > 120) throw invalidArgument("name must be at most 120 characters");
      const secret = generateManagementKey();
      const now = new Date();
      const key = em.create(ApiKeyEntity, {
        id: randomUUID(),
        workspaceId: workspace.id,
        userId: principal.userId,
        name,
        role: enumName(Role, role),
        keyHash: hashKey(secret),
        dateCreated: now,
        dateUpdated: now,
        dateLastUsed: null,
        dateRevoked: null,
      });
      await em.flush();
      return {
        apiKey: {
          id: key.id,
          dateCreated: timestampFromDate(now),
          dateUpdated: timestampFromDate(now),
          name: key.name ?? undefined,
          secureKey: secret,
          role,
        },
      };
    },

    async revokeApiKey(req, ctx) {
      const em = emOf(ctx);
      const workspace = await ownWorkspace(em, principalOf(ctx), req.workspaceId);
      const id = requireUuid("apiKeyId", req.apiKeyId);
      const key = await em.findOne(ApiKeyEntity, { id, workspaceId: workspace.id, dateRevoked: null });
      if (!key) throw notFound("API key not found");
      key.dateRevoked = new Date();
      key.dateUpdated = key.dateRevoked;
      await em.flush();
      return {};
    },

    async listInvites(req, ctx) {
      const em = emOf(ctx);
      const workspace = await ownWorkspace(em, principalOf(ctx), req.workspaceId);
      const page = pageOf(req);
      const rows = await em.find(
        InviteEntity,
        { workspaceId: workspace.id },
        { orderBy: [{ dateCreated: "desc" }, { id: "desc" }], limit: page.limit + 1, offset: page.offset },
      );
      const { items, nextPage } = paged(rows, page);
      const shared = await inviteWorkspace(em, workspace);
      return { items: items.map((invite) => inviteMessage(invite, shared)), nextPage };
    },

    async createInvites(req, ctx) {
      const em = emOf(ctx);
      const principal = principalOf(ctx);
      const workspace = await ownWorkspace(em, principal, req.workspaceId);
      if (req.emails.length > maxInvitesPerCall) {
        throw invalidArgument(`emails may hold at most ${maxInvitesPerCall} addresses`);
      }
      const emails = [...new Set(req.emails.map((email, i) => requireEmail(`emails[${i}]`, email)))];
      const role = req.role === Role.UNSPECIFIED ? Role.MEMBER : req.role;
      const now = new Date();
      const invites = emails.map((email) =>
        em.create(InviteEntity, {
          id: randomUUID(),
          workspaceId: workspace.id,
          creatorId: principal.userId ?? principal.apiKeyId ?? workspace.id,
          creatorName: principal.displayName,
          email,
          role: enumName(Role, role),
          status: enumName(InviteStatus, InviteStatus.PENDING),
          dateCreated: now,
        }),
      );
      await em.flush();
      const shared = await inviteWorkspace(em, workspace);
      return { items: invites.map((invite) => inviteMessage(invite, shared)) };
    },
  };
}

/** The workspace named in the path, if it is the caller's; any other is "not found". */
async function ownWorkspace(em: EntityManager, principal: Principal, workspaceId: string): Promise<Workspace> {
  const id = requireUuid("workspaceId", workspaceId);
  const workspace = id === principal.workspaceId ? await em.findOne(WorkspaceEntity, { id }) : null;
  if (!workspace) throw notFound("Workspace not found");
  return workspace;
}

/** A workspace as the contract shapes it, by ID: for other contexts that expand one (pipelines). */
export async function workspaceMessageById(em: EntityManager, workspaceId: string): Promise<MessageInitShape<typeof WorkspaceSchema> | undefined> {
  const workspace = await em.findOne(WorkspaceEntity, { id: workspaceId });
  return workspace ? workspaceMessage(em, workspace) : undefined;
}

async function workspaceMessage(em: EntityManager, workspace: Workspace): Promise<MessageInitShape<typeof WorkspaceSchema>> {
  const [inviteCount, memberCount, projectCount] = await Promise.all([
    em.count(InviteEntity, { workspaceId: workspace.id, status: enumName(InviteStatus, InviteStatus.PENDING) }),
    em.count(MemberEntity, { workspaceId: workspace.id }),
    countProjectsInWorkspace(em, workspace.id),
  ]);
  return {
    id: workspace.id,
    creatorId: workspace.creatorId ?? undefined,
    dateCreated: timestampFromDate(workspace.dateCreated),
    dateUpdated: timestampFromDate(workspace.dateUpdated),
    name: workspace.name,
    slug: workspace.slug,
    inviteCode: workspace.inviteCode,
    inviteCount,
    memberCount,
    projectCount,
    periodStartDate: workspace.periodStartDate ? timestampFromDate(workspace.periodStartDate) : undefined,
    periodEndDate: workspace.periodEndDate ? timestampFromDate(workspace.periodEndDate) : undefined,
    status: enumValue(WorkspaceStatus, workspace.status),
    monthlyUsage: [],
    samlOnlyAccess: workspace.samlOnlyAccess,
    wildcardDomains: workspace.wildcardDomains,
  };
}

interface InviteWorkspaceShape {
  id: string;
  dateCreated: Date;
  memberCount: number;
  name: string;
  slug: string;
}

async function inviteWorkspace(em: EntityManager, workspace: Workspace): Promise<InviteWorkspaceShape> {
  const memberCount = await em.count(MemberEntity, { workspaceId: workspace.id });
  return { id: workspace.id, dateCreated: workspace.dateCreated, memberCount, name: workspace.name, slug: workspace.slug };
}

function inviteMessage(invite: Invite, workspace: InviteWorkspaceShape): MessageInitShape<typeof InviteSchema> {
  return {
    id: invite.id,
    creator: { id: invite.creatorId, name: invite.creatorName ?? undefined },
    dateCreated: timestampFromDate(invite.dateCreated),
    email: invite.email,
    role: enumValue(Role, invite.role),
    status: enumValue(InviteStatus, invite.status),
    workspace: { ...workspace, dateCreated: timestampFromDate(workspace.dateCreated) },
  };
}


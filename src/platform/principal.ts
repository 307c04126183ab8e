import { Role } from "../../gen/warden/api/v1/common_pb.js";
import { Permission } from "../../gen/warden/api/v1/annotations_pb.js";

/**
 * Who is calling. Today always a workspace API key; a user signed in through OIDC will resolve
 * to the same shape, with `apiKeyId` null, so services never look at how the caller proved it.
 */
export interface Principal {
  workspaceId: string;
  role: Role;
  /** The person behind the call, when there is one (the owner of the key). */
  userId: string | null;
  apiKeyId: string | null;
  /** A display name for audit fields such as an invite's creator. */
  displayName: string | null;
}

/** The permission matrix: what each role may do. Documented in docs/api.md. */
const grants: Record<Role, readonly Permission[]> = {
  [Role.UNSPECIFIED]: [],
  [Role.VIEWER]: [Permission.READ],
  [Role.MEMBER]: [Permission.READ, Permission.WRITE],
  [Role.ADMIN]: [Permission.READ, Permission.WRITE, Permission.ADMIN],
};

export function roleAllows(role: Role, permission: Permission): boolean {
  return grants[role].includes(permission);
}

/** Roles ordered by what they allow, for "no higher than" checks. */
export function roleRank(role: Role): number {
  return grants[role].length;
}

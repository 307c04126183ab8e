import type { Api } from "./client.ts";
import type { Names, SubjectKind } from "./section.ts";

/**
 * The workspace's keys, users and groups by name and by ID. A name held twice (two users may share
 * one) finds the first, as the API lists them (by name, then ID).
 */
export async function loadNames(api: Api): Promise<Names> {
  const [keys, users, groups] = await Promise.all([
    api.admin.listGatewayKeys({}),
    api.admin.listGatewayUsers({}),
    api.admin.listGatewayGroups({}),
  ]);
  const lists: Record<SubjectKind, { id: string; name?: string }[]> = { key: keys.items, user: users.items, group: groups.items };
  return {
    id: (kind, name) => lists[kind].find((item) => item.name === name)?.id,
    name: (kind, id) => lists[kind].find((item) => item.id === id)?.name ?? id,
  };
}

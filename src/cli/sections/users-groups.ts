import { z } from "zod";
import { withoutDefaults, type Section } from "../section.ts";

export interface UserItem {
  name: string;
  email: string | null;
}

export interface GroupItem {
  name: string;
}

export const users: Section<UserItem> = {
  name: "users",
  noun: "user",
  item: () => z.strictObject({
    name: z.string().min(1).max(255),
    email: z.email("must be an email address").optional(),
  }).transform((u) => ({ name: u.name, email: u.email ?? null })),
  keyOf: (u) => u.name,
  fields: ["email"],
  updatable: [],
  // The API cannot change a user; deleting one would leave its keys without an owner.
  replace: { refuse: "a user's email cannot be changed (a user would have to be deleted, and its keys would lose their owner)" },

  async list(ctx) {
    const { items } = await ctx.api.admin.listGatewayUsers({});
    return items.map((u) => ({ id: u.id, item: { name: u.name, email: u.email ?? null } }));
  },
  async create(ctx, u) {
    await ctx.api.admin.createGatewayUser({ name: u.name, email: u.email ?? undefined });
  },
  async remove(ctx, id) {
    await ctx.api.admin.deleteGatewayUser({ userId: id });
  },
  toFile: (u) => withoutDefaults({ name: u.name, email: u.email }),
};

export const groups: Section<GroupItem> = {
  name: "groups",
  noun: "group",
  item: () => z.strictObject({ name: z.string().min(1).max(255) }),
  keyOf: (g) => g.name,
  fields: [],
  updatable: [],
  replace: "create-first",

  async list(ctx) {
    const { items } = await ctx.api.admin.listGatewayGroups({});
    return items.map((g) => ({ id: g.id, item: { name: g.name } }));
  },
  async create(ctx, g) {
    await ctx.api.admin.createGatewayGroup({ name: g.name });
  },
  async remove(ctx, id) {
    await ctx.api.admin.deleteGatewayGroup({ groupId: id });
  },
  toFile: (g) => ({ name: g.name }),
};

import { randomBytes } from "node:crypto";
import type { App } from "../../src/app.ts";
import { createWorkspace, type NewWorkspace } from "../../src/workspaces/bootstrap.ts";
import { generateManagementKey } from "../../src/workspaces/keys.ts";

/** Another tenant, with an ADMIN key of its own, for tenancy tests. */
export async function addWorkspace(app: App): Promise<NewWorkspace & { key: string; slug: string }> {
  const em = app.orm.em.fork();
  const key = generateManagementKey();
  const slug = `other-${randomBytes(4).toString("hex")}`;
  const created = createWorkspace(em, { name: "Other", slug, adminEmail: `${slug}@example.com`, adminKey: key });
  await em.flush();
  return { ...created, key, slug };
}

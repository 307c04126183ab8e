import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { iso, uuid } from "./support/matchers.ts";
import { startTestApp, type TestApp } from "./support/app.ts";
import { client, errorBody, type Call } from "./support/http.ts";

let t: TestApp;
let call: Call;
let workspaceId: string;


beforeAll(async () => {
  t = await startTestApp();
  call = client(t.baseUrl, t.adminKey);
  const rows = await t.app.orm.em.fork().execute<{ id: string }[]>("select id from workspace");
  workspaceId = rows[0]!.id;
});
afterAll(() => t?.stop());

describe("workspaces", () => {
  it("returns the bootstrapped workspace with real counts", async () => {
    await call("POST", "/v1/projects", { body: { name: "counted", taskType: "llm-base" } });
    const res = await call("GET", `/v1/workspaces/${workspaceId}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: workspaceId,
      creatorId: uuid,
      dateCreated: iso,
      dateUpdated: iso,
      name: "Default",
      slug: "default",
      inviteCode: expect.any(String),
      inviteCount: 0,
      memberCount: 1,
      projectCount: 1,
      periodStartDate: null,
      periodEndDate: null,
      status: "active",
      monthlyUsage: [],
      samlOnlyAccess: false,
      wildcardDomains: [],
    });
  });

  it("updates name, slug and invite code; {} is legal", async () => {
    const res = await call("PUT", `/v1/workspaces/${workspaceId}`, {
      body: { name: "Acme", slug: "acme-ml", inviteCode: "join-acme" },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: "Acme", slug: "acme-ml", inviteCode: "join-acme" });
    const empty = await call("PUT", `/v1/workspaces/${workspaceId}`, { body: {} });
    expect(empty.status).toBe(200);
    expect(empty.body).toMatchObject({ name: "Acme", slug: "acme-ml" });
  });

  it("refuses a slug that is not kebab-case", async () => {
    const res = await call("PUT", `/v1/workspaces/${workspaceId}`, { body: { slug: "Not A Slug" } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(
      errorBody("slug must be lower-case letters and digits, in words joined by single hyphens", "invalid_argument"),
    );
  });

  it("answers 404 for a workspace that is not the caller's", async () => {
    const res = await call("GET", "/v1/workspaces/00000000-0000-4000-8000-000000000000");
    expect(res.status).toBe(404);
    expect(res.body).toEqual(errorBody("Workspace not found", "not_found"));
  });
});

describe("API keys", () => {
  it("creates a key that works, shows the secret once, and can be revoked", async () => {
    const created = await call("POST", `/v1/workspaces/${workspaceId}/api-keys`, { body: { name: "ci" } });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: uuid,
      dateCreated: iso,
      dateUpdated: iso,
      dateLastUsed: null,
      name: "ci",
      secureKey: expect.stringMatching(/^sk-wm-[A-Za-z0-9_-]{43}$/),
      role: "MEMBER",
    });
    const { id, secureKey } = created.body as { id: string; secureKey: string };
    const stored = await t.app.orm.em.fork().execute<{ key_hash: string }[]>("select key_hash from api_key where id = ?", [id]);
    expect(stored[0]!.key_hash).not.toContain(secureKey);
    expect(stored[0]!.key_hash).toMatch(/^[0-9a-f]{64}$/);

    const asKey = client(t.baseUrl, secureKey);
    expect((await asKey("GET", "/v1/projects")).status).toBe(200);

    const revoked = await call("DELETE", `/v1/workspaces/${workspaceId}/api-keys/${id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.text).toBe("");
    const after = await asKey("GET", "/v1/projects");
    expect(after.status).toBe(401);
    expect(after.body).toEqual(errorBody("Invalid API key.", "unauthenticated"));
  });

  it("accepts {} and gives a null name", async () => {
    const res = await call("POST", `/v1/workspaces/${workspaceId}/api-keys`, { body: {} });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: null, role: "MEMBER" });
  });

  it("lets a MEMBER read and write projects but not manage the workspace", async () => {
    const created = await call("POST", `/v1/workspaces/${workspaceId}/api-keys`, { body: { role: "MEMBER" } });
    const member = client(t.baseUrl, (created.body as { secureKey: string }).secureKey);
    expect((await member("POST", "/v1/projects", { body: { name: "by-member", taskType: "llm-base" } })).status).toBe(201);
    const denied = await member("POST", `/v1/workspaces/${workspaceId}/api-keys`, { body: {} });
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual(errorBody("The MEMBER role may not call CreateApiKey.", "permission_denied"));
  });

  it("does not let a key create a key above its own role", async () => {
    const created = await call("POST", `/v1/workspaces/${workspaceId}/api-keys`, { body: { role: "ADMIN" } });
    expect(created.status).toBe(201);
    const viewer = await call("POST", `/v1/workspaces/${workspaceId}/api-keys`, { body: { role: "VIEWER" } });
    const asViewer = client(t.baseUrl, (viewer.body as { secureKey: string }).secureKey);
    expect((await asViewer("GET", "/v1/projects")).status).toBe(200);
    const res = await asViewer("POST", "/v1/projects", { body: { name: "nope", taskType: "llm-base" } });
    expect(res.status).toBe(403);
    expect(res.body).toEqual(errorBody("The VIEWER role may not call CreateProject.", "permission_denied"));
  });
});

describe("GET /v1/whoami", () => {
  it("answers the caller's workspace, role and key", async () => {
    const workspace = (await call("GET", `/v1/workspaces/${workspaceId}`)).body as { name: string; slug: string };
    const admin = await call("GET", "/v1/whoami");
    expect(admin.status).toBe(200);
    expect(admin.body).toEqual({
      workspaceId,
      workspaceName: workspace.name,
      workspaceSlug: workspace.slug,
      role: "ADMIN",
      apiKeyId: uuid,
      apiKeyName: expect.any(String),
      userId: uuid,
    });
    const created = await call("POST", `/v1/workspaces/${workspaceId}/api-keys`, { body: { name: "reader", role: "VIEWER" } });
    const viewer = created.body as { id: string; secureKey: string };
    expect((await call("GET", "/v1/whoami", { key: viewer.secureKey })).body).toMatchObject({ workspaceId, role: "VIEWER", apiKeyId: viewer.id, apiKeyName: "reader" });
  });
});

describe("invites", () => {
  it("creates invites for a list of e-mails and lists them with x-next", async () => {
    const res = await call("POST", `/v1/workspaces/${workspaceId}/invites`, {
      body: { emails: ["a@example.com", "b@example.com", "a@example.com"], role: "VIEWER" },
    });
    expect(res.status).toBe(201);
    const items = (res.body as { items: unknown[] }).items;
    expect(items).toHaveLength(2);
    expect(items[0]).toEqual({
      id: uuid,
      creator: { id: uuid, name: "admin", username: null },
      dateCreated: iso,
      email: "a@example.com",
      role: "VIEWER",
      status: "pending",
      workspace: { id: workspaceId, dateCreated: iso, memberCount: 1, name: "Acme", slug: "acme-ml" },
    });

    const page1 = await call("GET", `/v1/workspaces/${workspaceId}/invites?perPage=1`);
    expect(page1.status).toBe(200);
    expect((page1.body as { items: unknown[] }).items).toHaveLength(1);
    expect(page1.headers.get("x-next")).toBe(`${t.baseUrl}/v1/workspaces/${workspaceId}/invites?perPage=1&page=2`);
    const page2 = await call("GET", `/v1/workspaces/${workspaceId}/invites?perPage=1&page=2`);
    expect(page2.headers.get("x-next")).toBeNull();

    const workspace = await call("GET", `/v1/workspaces/${workspaceId}`);
    expect(workspace.body).toMatchObject({ inviteCount: 2 });
  });

  it("refuses an address that is not an e-mail", async () => {
    const res = await call("POST", `/v1/workspaces/${workspaceId}/invites`, { body: { emails: ["nope"] } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(errorBody("emails[0] must be an e-mail address", "invalid_argument"));
  });
});

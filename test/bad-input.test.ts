/**
 * The bad-input matrix of REST /v1: every route answers malformed, mistyped, incomplete,
 * unauthorised or foreign input with the contract's status and error body, and never with a 5xx.
 */
import { randomUUID } from "node:crypto";
import http from "node:http";
import net from "node:net";
import { getOption } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auth, Permission as ProtoPermission } from "../gen/warden/api/v1/annotations_pb.js";
import { RouteTable } from "../src/rest/route-table.ts";
import { services } from "../src/routes.ts";
import { subtypes } from "../src/tests/catalog.ts";
import { hashKey } from "../src/workspaces/keys.ts";
import { addWorkspace } from "./support/workspace.ts";
import { startTestApp, type TestApp } from "./support/app.ts";
import { client, errorBody, type ApiResponse, type CallOptions } from "./support/http.ts";

type Call = (method: string, path: string, options?: CallOptions) => Promise<ApiResponse>;

/** Every response of this file, for the closing "no 5xx" check. */
const sent: { request: string; status: number }[] = [];

function recordingClient(baseUrl: string, defaultKey: string): Call {
  const inner = client(baseUrl, defaultKey);
  return async (method, path, options) => {
    const response = await inner(method, path, options);
    sent.push({ request: `${method} ${path.length > 120 ? path.slice(0, 120) + "…" : path}`, status: response.status });
    return response;
  };
}

const codeByStatus: Record<number, string> = {
  400: "invalid_argument",
  401: "unauthenticated",
  403: "permission_denied",
  404: "not_found",
  405: "invalid_argument",
  409: "already_exists",
  413: "resource_exhausted",
};

/** Status and body in one assertion, so that a failure shows both. */
function expectError(response: ApiResponse, status: number, message: string): void {
  expect({ status: response.status, body: response.body }).toEqual({ status, body: errorBody(message, codeByStatus[status]) });
}

const missingKey = "Missing API key. Send it as a bearer token in the Authorization header.";
const invalidKey = "Invalid API key.";
const roles = "ADMIN, MEMBER, VIEWER";
const taskTypes = "llm-base, tabular-classification, tabular-regression, text-classification";
const testTypes = "integrity, consistency, performance, fairness, robustness";
const operators = "is, >, >=, <, <=, !=";
const thresholdValue = "must be a number, a boolean, a string or a list of strings";

const threshold = { insightName: "duplicateRowCount", measurement: "duplicateRowCount", operator: "<=", value: 0 };
const validTest = (name = "t") => ({ name, description: null, type: "integrity", subtype: "duplicateRowCount", thresholds: [threshold] });
const validVersion = () => ({ commit: { message: "m" }, storageUri: "s3://bucket/model.tar.gz" });

let t: TestApp;
let call: Call;

/** IDs of one workspace and one resource of each kind in it. */
interface Ids {
  workspace: string;
  apiKey: string;
  project: string;
  version: string;
  test: string;
  pipeline: string;
  task: string;
  /** The inference ID of a row of the pipeline. */
  row: string;
}
let own: Ids;
let other: Ids;
let otherKey: string;
let otherSlug: string;
let viewerKey: string;
let memberKey: string;

/** A template such as "/v1/projects/{project}/tests" with the IDs filled in. */
function fill(template: string, ids: Ids): string {
  return template.replace(/\{(\w+)\}/g, (_, name: keyof Ids) => ids[name]);
}


async function taskResultCount(): Promise<number> {
  const rows = await t.app.orm.em.fork().execute<{ n: number }[]>("select count(*)::int as n from task_result");
  return rows[0].n;
}

function idOf(response: ApiResponse): string {
  expect(response.status).toBeLessThan(300);
  return (response.body as { id: string }).id;
}

/** A project with a commit, a test, an inference pipeline and a finished-or-queued task. */
async function populate(key: string, workspace: string, apiKey: string): Promise<Ids> {
  const project = idOf(await call("POST", "/v1/projects", { key, body: { name: "p", taskType: "llm-base" } }));
  const version = idOf(await call("POST", `/v1/projects/${project}/versions`, { key, body: validVersion() }));
  const test = idOf(await call("POST", `/v1/projects/${project}/tests`, { key, body: validTest() }));
  const pipeline = idOf(await call("POST", `/v1/projects/${project}/inference-pipelines`, { key, body: { name: "i", description: null } }));
  const handle = await call("PUT", `/v1/projects/${project}/tests`, { key, body: { payloads: [{ id: test, archived: false }] } });
  expect(handle.status).toBe(202);
  const task = (handle.body as { taskResultId: string }).taskResultId;
  const row = "row-1";
  const streamed = await call("POST", `/v1/inference-pipelines/${pipeline}/data-stream`, {
    key,
    body: { config: { outputColumnName: "o", inferenceIdColumnName: "id" }, rows: [{ id: row, o: "x" }] },
  });
  expect(streamed.status).toBe(200);
  return { workspace, apiKey, project, version, test, pipeline, task, row };
}

async function createKey(role: string, name = role.toLowerCase()): Promise<{ id: string; secureKey: string }> {
  const response = await call("POST", `/v1/workspaces/${own.workspace}/api-keys`, { body: { name, role } });
  expect(response.status).toBe(201);
  return response.body as { id: string; secureKey: string };
}

beforeAll(async () => {
  t = await startTestApp();
  call = recordingClient(t.baseUrl, t.adminKey);
  const [workspace] = await t.app.orm.em.fork().execute<{ id: string }[]>("select id from workspace");
  const [adminKeyRow] = await t.app.orm.em.fork().execute<{ id: string }[]>("select id from api_key where key_hash = ?", [hashKey(t.adminKey)]);
  own = await populate(t.adminKey, workspace.id, adminKeyRow.id);
  const second = await addWorkspace(t.app);
  otherKey = second.key;
  otherSlug = second.slug;
  other = await populate(otherKey, second.workspaceId, second.apiKeyId);
  viewerKey = (await createKey("VIEWER")).secureKey;
  memberKey = (await createKey("MEMBER")).secureKey;
});
afterAll(() => t?.stop());

// ---- the route table ----------------------------------------------------------------------

type Permission = "READ" | "WRITE" | "ADMIN";

interface RouteCase {
  method: string;
  template: string;
  rpc: string;
  permission: Permission;
  /** A body the route accepts. */
  body?: () => unknown;
  /** The route also takes the key in X-Api-Key. */
  apiKeyHeader?: boolean;
  /** A list route, with page and perPage. */
  list?: boolean;
  /** Capped at WARDEN_INGEST_MAX_BODY_BYTES instead (test/pipeline-data.test.ts). */
  largeBody?: boolean;
  /** A list's largest perPage, when it is not 100. */
  maxPerPage?: number;
  /** A list's answer past its last page, when it holds more than `items`. */
  emptyPage?: unknown;
  /** The field named when the first ID of the path is not a UUID, and the 404 message. */
  idField?: string;
  notFound?: string;
}

const workspaceId = { idField: "workspaceId", notFound: "Workspace not found" };
const projectId = { idField: "projectId", notFound: "Project not found" };
const versionId = { idField: "projectVersionId", notFound: "Project version not found" };
const pipelineId = { idField: "inferencePipelineId", notFound: "Inference pipeline not found" };
const taskId = { idField: "taskResultId", notFound: "Task result not found" };

const routes: RouteCase[] = [
  { method: "GET", template: "/v1/whoami", rpc: "WhoAmI", permission: "READ" },
  { method: "GET", template: "/v1/workspaces/{workspace}", rpc: "GetWorkspace", permission: "READ", ...workspaceId },
  { method: "PUT", template: "/v1/workspaces/{workspace}", rpc: "UpdateWorkspace", permission: "ADMIN", body: () => ({}), ...workspaceId },
  { method: "POST", template: "/v1/workspaces/{workspace}/api-keys", rpc: "CreateApiKey", permission: "ADMIN", body: () => ({ name: "k" }), ...workspaceId },
  { method: "DELETE", template: "/v1/workspaces/{workspace}/api-keys/{apiKey}", rpc: "RevokeApiKey", permission: "ADMIN", ...workspaceId },
  { method: "GET", template: "/v1/workspaces/{workspace}/invites", rpc: "ListInvites", permission: "READ", list: true, ...workspaceId },
  { method: "POST", template: "/v1/workspaces/{workspace}/invites", rpc: "CreateInvites", permission: "ADMIN", body: () => ({ emails: ["someone@example.com"] }), ...workspaceId },
  { method: "GET", template: "/v1/projects", rpc: "ListProjects", permission: "READ", list: true },
  { method: "POST", template: "/v1/projects", rpc: "CreateProject", permission: "WRITE", body: () => ({ name: "never", taskType: "llm-base" }) },
  { method: "PATCH", template: "/v1/projects/{project}", rpc: "UpdateProject", permission: "WRITE", body: () => ({ description: "d" }), apiKeyHeader: true, ...projectId },
  { method: "DELETE", template: "/v1/projects/{project}", rpc: "DeleteProject", permission: "WRITE", apiKeyHeader: true, ...projectId },
  { method: "GET", template: "/v1/projects/{project}/versions", rpc: "ListProjectVersions", permission: "READ", list: true, ...projectId },
  { method: "POST", template: "/v1/projects/{project}/versions", rpc: "CreateProjectVersion", permission: "WRITE", body: validVersion, ...projectId },
  { method: "GET", template: "/v1/versions/{version}", rpc: "GetProjectVersion", permission: "READ", apiKeyHeader: true, ...versionId },
  { method: "GET", template: "/v1/versions/{version}/results", rpc: "ListTestResults", permission: "READ", list: true, ...versionId },
  { method: "POST", template: "/v1/projects/{project}/tests", rpc: "CreateTest", permission: "WRITE", body: () => validTest("never"), ...projectId },
  { method: "GET", template: "/v1/projects/{project}/tests", rpc: "ListTests", permission: "READ", list: true, ...projectId },
  { method: "PUT", template: "/v1/projects/{project}/tests", rpc: "UpdateTests", permission: "WRITE", body: () => ({ payloads: [{ id: own.test, archived: false }] }), ...projectId },
  { method: "GET", template: "/v1/projects/{project}/inference-pipelines", rpc: "ListInferencePipelines", permission: "READ", list: true, ...projectId },
  { method: "POST", template: "/v1/projects/{project}/inference-pipelines", rpc: "CreateInferencePipeline", permission: "WRITE", body: () => ({ name: "never", description: null }), ...projectId },
  { method: "GET", template: "/v1/inference-pipelines/{pipeline}", rpc: "GetInferencePipeline", permission: "READ", ...pipelineId },
  { method: "PUT", template: "/v1/inference-pipelines/{pipeline}", rpc: "UpdateInferencePipeline", permission: "WRITE", body: () => ({ name: "renamed" }), ...pipelineId },
  { method: "DELETE", template: "/v1/inference-pipelines/{pipeline}", rpc: "DeleteInferencePipeline", permission: "WRITE", ...pipelineId },
  { method: "GET", template: "/v1/task-results/{task}", rpc: "GetTaskResult", permission: "READ", ...taskId },
  {
    method: "POST", template: "/v1/inference-pipelines/{pipeline}/data-stream", rpc: "StreamData", permission: "WRITE",
    body: () => ({ config: { outputColumnName: "o" }, rows: [{ o: "never" }] }), largeBody: true, ...pipelineId,
  },
  {
    method: "POST", template: "/v1/inference-pipelines/{pipeline}/data", rpc: "LoadData", permission: "WRITE",
    body: () => ({ storageUri: "local://nowhere", performDataMerge: false, config: { outputColumnName: "o" } }), ...pipelineId,
  },
  { method: "POST", template: "/v1/inference-pipelines/{pipeline}/rows", rpc: "ListRows", permission: "READ", body: () => ({}), ...pipelineId },
  { method: "PUT", template: "/v1/inference-pipelines/{pipeline}/rows?inferenceId={row}", rpc: "UpdateRow", permission: "WRITE", body: () => ({ row: { never: 1 } }), ...pipelineId },
  { method: "GET", template: "/v1/inference-pipelines/{pipeline}/rows/{row}", rpc: "GetRow", permission: "READ", ...pipelineId },
  { method: "DELETE", template: "/v1/inference-pipelines/{pipeline}/rows/{row}", rpc: "DeleteRow", permission: "ADMIN", ...pipelineId },
  { method: "POST", template: "/v1/storage/presigned-url?objectName=data.csv", rpc: "CreatePresignedUrl", permission: "WRITE" },
  { method: "GET", template: "/v1/inference-pipelines/{pipeline}/results", rpc: "ListPipelineTestResults", permission: "READ", list: true, ...pipelineId },
  {
    method: "POST", template: "/v1/tests/{test}/evaluate", rpc: "EvaluateTest", permission: "WRITE",
    body: () => ({ startTimestamp: 1_763_971_200, endTimestamp: 1_763_974_800 }), idField: "testId", notFound: "Test not found",
  },
  { method: "GET", template: "/v1/tests/{test}/results", rpc: "ListResultsOfTest", permission: "READ", list: true, idField: "testId", notFound: "Test not found", emptyPage: { items: [], lastUnskippedResult: null } },
  { method: "GET", template: "/v1/gateway/request-log", rpc: "ListRequestLog", permission: "READ", list: true, maxPerPage: 1000 },
];

const bodyRoutes = routes.filter((r) => r.body);
const idRoutes = routes.filter((r) => r.idField);
const listRoutes = routes.filter((r) => r.list);

function send(route: RouteCase, ids: Ids, options: CallOptions = {}): Promise<ApiResponse> {
  return call(route.method, fill(route.template, ids), { body: route.body?.(), ...options });
}

it("the route table above is every REST route of the management API's protos, with its auth rule", () => {
  const shape = (method: string, template: string, rpc: string, permission: string, apiKeyHeader: boolean) =>
    `${method} ${template.replace(/\{\w+\}/g, "{}")} ${rpc} ${permission}${apiKeyHeader ? " +X-Api-Key" : ""}`;
  // The gateway's control plane has its own matrix, in gateway-admin.test.ts; its request log is
  // a list that operators read as they read the management API's, and it is held to this one.
  const management = new RouteTable(services).routes.filter(
    (route) => !route.rpc.parent.typeName.startsWith("warden.gateway.") || route.rpc.name === "ListRequestLog",
  );
  const fromProtos = management.map((route) => {
    const rule = getOption(route.rpc, auth);
    return shape(route.httpMethod, route.template, route.rpc.name, ProtoPermission[rule.permission], rule.apiKeyHeader);
  });
  const here = routes.map((r) => shape(r.method, r.template.replace(/\?.*/, ""), r.rpc, r.permission, r.apiKeyHeader ?? false));
  expect([...here].sort()).toEqual([...fromProtos].sort());
  expect(listRoutes.map((r) => r.rpc)).toEqual(routes.filter((r) => r.method === "GET" && r.rpc.startsWith("List")).map((r) => r.rpc));
});

// ---- every route --------------------------------------------------------------------------

describe("every body route", () => {
  it.each(bodyRoutes)("$method $template: malformed JSON is 400", async (route) => {
    const path = fill(route.template, own);
    expectError(await call(route.method, path, { rawBody: '{"name": ' }), 400, "Malformed JSON body: Unexpected end of JSON input");
    expectError(
      await call(route.method, path, { rawBody: "{name: 1}" }),
      400,
      "Malformed JSON body: Expected property name or '}' in JSON at position 1 (line 1 column 2)",
    );
  });

  it.each(bodyRoutes)("$method $template: a body that is not a JSON object is 400", async (route) => {
    const path = fill(route.template, own);
    for (const rawBody of ["[]", '[{"name": "x"}]', "null", "42", '"text"', "true"]) {
      expectError(await call(route.method, path, { rawBody }), 400, "The request body must be a JSON object");
    }
  });
});

describe("authentication on every route", () => {
  it.each(routes)("$method $template: no key is 401", async (route) => {
    expectError(await send(route, own, { key: null }), 401, missingKey);
  });

  it.each(routes)("$method $template: a header that is not a bearer token is 401", async (route) => {
    expectError(await send(route, own, { key: null, headers: { authorization: `Basic ${t.adminKey}` } }), 401, missingKey);
    expectError(await send(route, own, { key: null, headers: { authorization: "Bearer" } }), 401, missingKey);
  });

  it.each(routes)("$method $template: a wrong key is 401", async (route) => {
    expectError(await send(route, own, { key: "sk-wm-not-a-real-key" }), 401, invalidKey);
    expectError(await send(route, own, { key: t.adminKey + "x" }), 401, invalidKey);
  });

  describe("a revoked key", () => {
    let revoked: string;
    beforeAll(async () => {
      const key = await createKey("ADMIN", "to-revoke");
      revoked = key.secureKey;
      expect((await call("GET", "/v1/projects", { key: revoked })).status).toBe(200);
      const revoke = await call("DELETE", `/v1/workspaces/${own.workspace}/api-keys/${key.id}`);
      expect({ status: revoke.status, text: revoke.text }).toEqual({ status: 200, text: "" });
    });

    it.each(routes)("$method $template: is 401", async (route) => {
      expectError(await send(route, own, { key: revoked }), 401, invalidKey);
    });
  });

  describe("X-Api-Key", () => {
    const headerRoutes = routes.filter((r) => r.apiKeyHeader);
    const bearerOnly = routes.filter((r) => !r.apiKeyHeader);

    it("is allowed on exactly PATCH /v1/projects/{id}, DELETE /v1/projects/{id} and GET /v1/versions/{id}", () => {
      expect(headerRoutes.map((r) => `${r.method} ${r.template}`)).toEqual([
        "PATCH /v1/projects/{project}",
        "DELETE /v1/projects/{project}",
        "GET /v1/versions/{version}",
      ]);
    });

    it.each(bearerOnly)("$method $template: a key in X-Api-Key only is 401", async (route) => {
      expectError(await send(route, own, { key: null, headers: { "x-api-key": t.adminKey } }), 401, missingKey);
    });

    it("is accepted by PATCH /v1/projects/{id}", async () => {
      const response = await call("PATCH", `/v1/projects/${own.project}`, { key: null, headers: { "x-api-key": t.adminKey }, body: { description: "via header" } });
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ id: own.project, description: "via header" });
    });

    it("is accepted by GET /v1/versions/{id}", async () => {
      const response = await call("GET", `/v1/versions/${own.version}`, { key: null, headers: { "x-api-key": t.adminKey } });
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ id: own.version });
    });

    it("is accepted by DELETE /v1/projects/{id}", async () => {
      const doomed = idOf(await call("POST", "/v1/projects", { body: { name: "doomed-by-header", taskType: "llm-base" } }));
      const response = await call("DELETE", `/v1/projects/${doomed}`, { key: null, headers: { "x-api-key": t.adminKey } });
      expect({ status: response.status, text: response.text }).toEqual({ status: 200, text: "" });
    });

    it.each(headerRoutes)("$method $template: a wrong key in X-Api-Key is 401", async (route) => {
      expectError(await send(route, own, { key: null, headers: { "x-api-key": "sk-wm-wrong" } }), 401, invalidKey);
    });

    it.each(headerRoutes)("$method $template: a VIEWER key in X-Api-Key is held to its role", async (route) => {
      const response = await send(route, own, { key: null, headers: { "x-api-key": viewerKey } });
      if (route.permission === "READ") {
        expect(response.status).toBe(200);
      } else {
        expectError(response, 403, `The VIEWER role may not call ${route.rpc}.`);
      }
    });
  });
});

describe("roles on every route", () => {
  const writes = routes.filter((r) => r.permission !== "READ");
  const reads = routes.filter((r) => r.permission === "READ");
  const adminOnly = routes.filter((r) => r.permission === "ADMIN");

  it.each(writes)("$method $template: a VIEWER key is 403", async (route) => {
    expectError(await send(route, own, { key: viewerKey }), 403, `The VIEWER role may not call ${route.rpc}.`);
  });

  it.each(adminOnly)("$method $template: a MEMBER key is 403", async (route) => {
    expectError(await send(route, own, { key: memberKey }), 403, `The MEMBER role may not call ${route.rpc}.`);
  });

  it.each(reads)("$method $template: a VIEWER key may read", async (route) => {
    expect((await send(route, own, { key: viewerKey })).status).toBe(200);
  });

  it("a MEMBER key may write", async () => {
    const response = await call("POST", `/v1/projects/${own.project}/inference-pipelines`, { key: memberKey, body: { name: "by member", description: null } });
    expect(response.status).toBe(200);
  });
});

describe("IDs in paths", () => {
  const bad = { workspace: "not-a-uuid", apiKey: "not-a-uuid", project: "not-a-uuid", version: "not-a-uuid", test: "not-a-uuid", pipeline: "not-a-uuid", task: "not-a-uuid", row: "r" };

  it.each(idRoutes)("$method $template: an ID that is not a UUID is 400", async (route) => {
    expectError(await send(route, bad), 400, `${route.idField} must be a UUID`);
  });

  it("DELETE /v1/workspaces/{id}/api-keys/{keyId}: a key ID that is not a UUID is 400", async () => {
    expectError(await call("DELETE", `/v1/workspaces/${own.workspace}/api-keys/not-a-uuid`), 400, "apiKeyId must be a UUID");
  });

  it.each(idRoutes)("$method $template: an ID from another workspace is 404", async (route) => {
    expectError(await send(route, other), 404, route.notFound!);
  });

  it.each(idRoutes)("$method $template: an ID that exists nowhere is 404", async (route) => {
    const nowhere = { workspace: randomUUID(), apiKey: randomUUID(), project: randomUUID(), version: randomUUID(), test: randomUUID(), pipeline: randomUUID(), task: randomUUID(), row: "r" };
    expectError(await send(route, nowhere), 404, route.notFound!);
  });

  it("DELETE /v1/workspaces/{own}/api-keys/{key of another workspace} is 404", async () => {
    expectError(await call("DELETE", `/v1/workspaces/${own.workspace}/api-keys/${other.apiKey}`), 404, "API key not found");
  });

  it("nothing of the other workspace was changed by those calls", async () => {
    const key = otherKey;
    const project = await call("GET", "/v1/projects", { key });
    expect(project.body).toMatchObject({ items: [{ id: other.project, name: "p", description: null }] });
    expect((await call("GET", `/v1/versions/${other.version}`, { key })).status).toBe(200);
    expect((await call("GET", `/v1/projects/${other.project}/tests`, { key })).body).toMatchObject({ items: [{ id: other.test, name: "t" }] });
    expect((await call("GET", `/v1/inference-pipelines/${other.pipeline}`, { key })).body).toMatchObject({ id: other.pipeline, name: "i" });
    expect((await call("GET", `/v1/task-results/${other.task}`, { key })).status).toBe(200);
    expect((await call("GET", `/v1/workspaces/${other.workspace}`, { key })).body).toMatchObject({ name: "Other", slug: otherSlug });
    expect((await call("GET", `/v1/workspaces/${other.workspace}/invites`, { key })).body).toEqual({ items: [] });
  });
});

describe("pagination on every list route", () => {
  const cases = (max: number): [string, string][] => [
    ["perPage=0", `perPage must be an integer from 1 to ${max}`],
    [`perPage=${max + 1}`, `perPage must be an integer from 1 to ${max}`],
    ["perPage=-1", `perPage must be an integer from 1 to ${max}`],
    ["perPage=abc", "perPage must be an integer"],
    ["perPage=1.5", "perPage must be an integer"],
    ["perPage=", "perPage must be an integer"],
    ["page=0", "page must be an integer of at least 1"],
    ["page=-3", "page must be an integer of at least 1"],
    ["page=abc", "page must be an integer"],
    ["page=99999999999", "page is out of range"],
  ];
  const matrix = listRoutes.flatMap((route) => cases(route.maxPerPage ?? 100).map(([query, message]) => ({ ...route, query, message })));

  it.each(matrix)("$method $template?$query is 400", async ({ template, query, message }) => {
    expectError(await call("GET", `${fill(template, own)}?${query}`), 400, message);
  });

  it.each(listRoutes)("$method $template: the edges 1 and the largest are allowed, and a page far past the end is empty", async ({ template, emptyPage, maxPerPage }) => {
    const path = fill(template, own);
    expect((await call("GET", `${path}?perPage=1`)).status).toBe(200);
    expect((await call("GET", `${path}?perPage=${maxPerPage ?? 100}`)).status).toBe(200);
    const far = await call("GET", `${path}?page=2147483647&perPage=100`);
    expect({ status: far.status, body: far.body }).toEqual({ status: 200, body: emptyPage ?? { items: [] } });
  });
});

// ---- per endpoint ---------------------------------------------------------------------------

type BodyCase = [label: string, body: unknown, message: string];

describe("PUT /v1/workspaces/{id}", () => {
  const cases: BodyCase[] = [
    ["name: 123", { name: 123 }, "name must be a string"],
    ["slug: true", { slug: true }, "slug must be a string"],
    ["inviteCode: []", { inviteCode: [] }, "inviteCode must be a string"],
    ["name: empty", { name: "" }, "name is required"],
    ["name: blank", { name: "   " }, "name is required"],
    ["name: 81 characters", { name: "n".repeat(81) }, "name must be at most 80 characters"],
    ["slug: upper case and a space", { slug: "Bad Slug" }, "slug must be lower-case letters and digits, in words joined by single hyphens"],
    ["slug: a double hyphen", { slug: "a--b" }, "slug must be lower-case letters and digits, in words joined by single hyphens"],
    ["slug: 33 characters", { slug: "s".repeat(33) }, "slug must be at most 32 characters"],
    ["inviteCode: empty", { inviteCode: "" }, "inviteCode is required"],
  ];
  it.each(cases)("%s is 400", async (_, body, message) => {
    expectError(await call("PUT", `/v1/workspaces/${own.workspace}`, { body }), 400, message);
  });

  it("a slug taken by another workspace is 409, not to be retried", async () => {
    const response = await call("PUT", `/v1/workspaces/${own.workspace}`, { body: { slug: otherSlug } });
    expectError(response, 409, `The slug "${otherSlug}" is already taken`);
    expect(response.headers.get("x-should-retry")).toBe("false");
  });

  it("unknown keys are ignored, and the failed updates above changed nothing", async () => {
    const response = await call("PUT", `/v1/workspaces/${own.workspace}`, { body: { plan: "enterprise", id: randomUUID() } });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ id: own.workspace, name: "Default", slug: "default" });
  });
});

describe("POST /v1/workspaces/{id}/api-keys", () => {
  const cases: BodyCase[] = [
    ["name: 123", { name: 123 }, "name must be a string"],
    ["role: OWNER", { role: "OWNER" }, `role must be one of: ${roles}`],
    ["role: 1", { role: 1 }, `role must be one of: ${roles}`],
    ["role: lower case", { role: "viewer" }, `role must be one of: ${roles}`],
    ["name: 121 characters", { name: "k".repeat(121) }, "name must be at most 120 characters"],
  ];
  it.each(cases)("%s is 400", async (_, body, message) => {
    expectError(await call("POST", `/v1/workspaces/${own.workspace}/api-keys`, { body }), 400, message);
  });

  it("unknown keys are ignored on create", async () => {
    const response = await call("POST", `/v1/workspaces/${own.workspace}/api-keys`, { body: { name: "extra", scopes: ["all"] } });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ name: "extra", role: "MEMBER" });
  });
});

describe("DELETE /v1/workspaces/{id}/api-keys/{keyId}", () => {
  it("revoking a key twice is 404 the second time", async () => {
    const key = await createKey("VIEWER", "twice");
    expect((await call("DELETE", `/v1/workspaces/${own.workspace}/api-keys/${key.id}`)).status).toBe(200);
    expectError(await call("DELETE", `/v1/workspaces/${own.workspace}/api-keys/${key.id}`), 404, "API key not found");
  });
});

describe("POST /v1/workspaces/{id}/invites", () => {
  const cases: BodyCase[] = [
    ["emails: a string", { emails: "a@example.com" }, "emails must be an array"],
    ["emails: [1]", { emails: [1] }, "emails[0] must be a string"],
    ["emails: not an address", { emails: ["nope"] }, "emails[0] must be an e-mail address"],
    ["emails: the second is bad", { emails: ["ok@example.com", "a b@example.com"] }, "emails[1] must be an e-mail address"],
    ["emails: 121 characters", { emails: [`${"a".repeat(109)}@example.com`] }, "emails[0] must be an e-mail address"],
    ["emails: 101 addresses", { emails: Array.from({ length: 101 }, (_, i) => `u${i}@example.com`) }, "emails may hold at most 100 addresses"],
    ["role: OWNER", { emails: ["ok@example.com"], role: "OWNER" }, `role must be one of: ${roles}`],
  ];
  it.each(cases)("%s is 400", async (_, body, message) => {
    expectError(await call("POST", `/v1/workspaces/${own.workspace}/invites`, { body }), 400, message);
  });

  it("nothing was invited by the failed calls", async () => {
    expect((await call("GET", `/v1/workspaces/${own.workspace}/invites`)).body).toEqual({ items: [] });
  });

  it("unknown keys are ignored on create", async () => {
    const response = await call("POST", `/v1/workspaces/${own.workspace}/invites`, { body: { emails: ["new@example.com"], message: "welcome" } });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ items: [{ email: "new@example.com", role: "MEMBER", status: "pending" }] });
  });
});

describe("GET /v1/projects", () => {
  it("an unknown taskType filter is 400", async () => {
    expectError(await call("GET", "/v1/projects?taskType=nope"), 400, `taskType must be one of: ${taskTypes}`);
  });
});

describe("POST /v1/projects", () => {
  const wrongTypes: BodyCase[] = [
    ["name: 123", { name: 123, taskType: "llm-base" }, "name must be a string"],
    ["taskType: nope", { name: "x", taskType: "nope" }, `taskType must be one of: ${taskTypes}`],
    ["taskType: 1", { name: "x", taskType: 1 }, `taskType must be one of: ${taskTypes}`],
    ["taskType: the proto name", { name: "x", taskType: "TASK_TYPE_LLM_BASE" }, `taskType must be one of: ${taskTypes}`],
    ["description: 5", { name: "x", taskType: "llm-base", description: 5 }, "description must be a string"],
    ["modelTypes: a string", { name: "x", taskType: "llm-base", modelTypes: "llm" }, "modelTypes must be an array"],
    ["modelTypes: [1]", { name: "x", taskType: "llm-base", modelTypes: [1] }, "modelTypes[0] must be a string"],
    ["dataRetentionDays: a string", { name: "x", taskType: "llm-base", dataRetentionDays: "30" }, "dataRetentionDays must be an integer"],
    ["dataRetentionDays: 1.5", { name: "x", taskType: "llm-base", dataRetentionDays: 1.5 }, "dataRetentionDays must be an integer"],
    ["dataRetentionDays: 2^31", { name: "x", taskType: "llm-base", dataRetentionDays: 2 ** 31 }, "dataRetentionDays must be an integer"],
    ["dataRetentionDays: 0", { name: "x", taskType: "llm-base", dataRetentionDays: 0 }, "dataRetentionDays must be at least 1"],
    ["name: 256 characters", { name: "n".repeat(256), taskType: "llm-base" }, "name must be at most 255 characters"],
  ];
  it.each(wrongTypes)("%s is 400", async (_, body, message) => {
    expectError(await call("POST", "/v1/projects", { body }), 400, message);
  });

  const missing: BodyCase[] = [
    ["an empty body", {}, "name is required"],
    ["no name", { taskType: "llm-base" }, "name is required"],
    ["name: null", { name: null, taskType: "llm-base" }, "name is required"],
    ["a blank name", { name: "  ", taskType: "llm-base" }, "name is required"],
    ["no taskType", { name: "x" }, "taskType is required"],
    ["taskType: null", { name: "x", taskType: null }, "taskType is required"],
    ["task_type instead of taskType", { name: "x", task_type: "llm-base" }, "taskType is required"],
  ];
  it.each(missing)("%s is 400", async (_, body, message) => {
    expectError(await call("POST", "/v1/projects", { body }), 400, message);
  });

  it("an empty request body is 400", async () => {
    expectError(await call("POST", "/v1/projects", { rawBody: "" }), 400, "name is required");
  });

  it("a name already used in the workspace is 409, not to be retried", async () => {
    const response = await call("POST", "/v1/projects", { body: { name: "p", taskType: "llm-base" } });
    expectError(response, 409, 'A project named "p" already exists in this workspace');
    expect(response.headers.get("x-should-retry")).toBe("false");
  });

  it("unknown keys are ignored on create", async () => {
    const response = await call("POST", "/v1/projects", {
      body: { name: "extras", taskType: "llm-base", source: "web", id: randomUUID(), gitRepo: { url: "x" }, unknown: [1, 2] },
    });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ name: "extras", source: "api", gitRepo: null });
  });

  it("the failed creates made no project", async () => {
    const list = await call("GET", "/v1/projects");
    const names = (list.body as { items: { name: string }[] }).items.map((p) => p.name).sort();
    expect(names).toEqual(["extras", "p"]);
  });
});

describe("PATCH /v1/projects/{id}", () => {
  const unknown: BodyCase[] = [
    ["taskType", { taskType: "llm-base" }, "taskType is not an allowed property"],
    ["workspaceId", { workspaceId: randomUUID() }, "workspaceId is not an allowed property"],
    ["id", { id: randomUUID() }, "id is not an allowed property"],
    ["source", { source: "web" }, "source is not an allowed property"],
    ["a made-up key", { frobnicate: true }, "frobnicate is not an allowed property"],
    ["a snake_case key", { data_retention_days: 5 }, "data_retention_days is not an allowed property"],
    ["an unknown key next to a known one", { name: "renamed", versionCount: 3 }, "versionCount is not an allowed property"],
    ["an unknown key whose value is null", { gitRepo: null }, "gitRepo is not an allowed property"],
  ];
  it.each(unknown)("an unknown property (%s) is 400", async (_, body, message) => {
    expectError(await call("PATCH", `/v1/projects/${own.project}`, { body }), 400, message);
  });

  const wrongTypes: BodyCase[] = [
    ["name: 123", { name: 123 }, "name must be a string"],
    ["name: empty", { name: "" }, "name is required"],
    ["description: false", { description: false }, "description must be a string"],
    ["purpose: {}", { purpose: {} }, "purpose must be a string"],
    ["modelTypes: a string", { modelTypes: "llm" }, "modelTypes must be an array"],
    ["modelTypes: [1]", { modelTypes: [1] }, "modelTypes[0] must be a string"],
    ["modelDeveloper: 1", { modelDeveloper: 1 }, "modelDeveloper must be a string"],
    ["dataRetentionDays: a string", { dataRetentionDays: "7" }, "dataRetentionDays must be an integer"],
    ["dataRetentionDays: 0", { dataRetentionDays: 0 }, "dataRetentionDays must be at least 1"],
    ["dataRetentionDays: -1", { dataRetentionDays: -1 }, "dataRetentionDays must be at least 1"],
  ];
  it.each(wrongTypes)("%s is 400", async (_, body, message) => {
    expectError(await call("PATCH", `/v1/projects/${own.project}`, { body }), 400, message);
  });

  it("renaming to a name already used is 409", async () => {
    expectError(await call("PATCH", `/v1/projects/${own.project}`, { body: { name: "extras" } }), 409, 'A project named "extras" already exists in this workspace');
  });

  it("the failed updates changed nothing", async () => {
    const response = await call("PATCH", `/v1/projects/${own.project}`, { body: {} });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ name: "p", purpose: null, modelTypes: [], modelDeveloper: null, dataRetentionDays: null });
  });
});

describe("DELETE /v1/projects/{id}", () => {
  it("deleting a project twice is 404 the second time", async () => {
    const doomed = idOf(await call("POST", "/v1/projects", { body: { name: "doomed", taskType: "llm-base" } }));
    expect((await call("DELETE", `/v1/projects/${doomed}`)).status).toBe(200);
    expectError(await call("DELETE", `/v1/projects/${doomed}`), 404, "Project not found");
  });
});

describe("POST /v1/projects/{id}/versions", () => {
  const path = () => `/v1/projects/${own.project}/versions`;
  const wrongTypes: BodyCase[] = [
    ["commit: a string", { commit: "m", storageUri: "s3://b/k" }, "commit must be an object"],
    ["commit: an array", { commit: [], storageUri: "s3://b/k" }, "commit must be an object"],
    ["commit.message: 5", { commit: { message: 5 }, storageUri: "s3://b/k" }, "commit.message must be a string"],
    ["commit.fileSize: a string", { commit: { message: "m", fileSize: "10" }, storageUri: "s3://b/k" }, "commit.fileSize must be an integer"],
    ["commit.fileSize: 1.5", { commit: { message: "m", fileSize: 1.5 }, storageUri: "s3://b/k" }, "commit.fileSize must be an integer"],
    ["commit.fileSize: -1", { commit: { message: "m", fileSize: -1 }, storageUri: "s3://b/k" }, "commit.fileSize must be a non-negative integer"],
    ["commit.gitCommitSha: 1", { commit: { message: "m", gitCommitSha: 1 }, storageUri: "s3://b/k" }, "commit.gitCommitSha must be a string"],
    ["storageUri: 5", { commit: { message: "m" }, storageUri: 5 }, "storageUri must be a string"],
    ["archived: a string", { ...validVersion(), archived: "yes" }, "archived must be a boolean"],
    ["deploymentStatus: 1", { ...validVersion(), deploymentStatus: 1 }, "deploymentStatus must be a string"],
  ];
  it.each(wrongTypes)("%s is 400", async (_, body, message) => {
    expectError(await call("POST", path(), { body }), 400, message);
  });

  const missing: BodyCase[] = [
    ["an empty body", {}, "commit is required"],
    ["no commit", { storageUri: "s3://b/k" }, "commit is required"],
    ["commit: null", { commit: null, storageUri: "s3://b/k" }, "commit is required"],
    ["no commit.message", { commit: {}, storageUri: "s3://b/k" }, "commit.message is required"],
    ["a blank commit.message", { commit: { message: " " }, storageUri: "s3://b/k" }, "commit.message is required"],
    ["no storageUri", { commit: { message: "m" } }, "storageUri is required"],
    ["storageUri: empty", { commit: { message: "m" }, storageUri: "" }, "storageUri is required"],
  ];
  it.each(missing)("%s is 400", async (_, body, message) => {
    expectError(await call("POST", path(), { body }), 400, message);
  });

  it("unknown keys are ignored on create, nested ones too", async () => {
    const response = await call("POST", path(), { body: { commit: { message: "extras", source: "cli", id: randomUUID() }, storageUri: "s3://b/k", status: "completed" } });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ status: "queued", commit: { message: "extras" } });
  });

  it("the failed creates made no commit", async () => {
    const list = await call("GET", path());
    expect((list.body as { items: unknown[] }).items).toHaveLength(2);
  });
});

describe("GET /v1/versions/{id}/results", () => {
  const cases: [string, string][] = [
    ["goalStatus=nope", "goalStatus must be one of: running, passing, failing, skipped, error"],
    ["status=nope", "status must be one of: running, passing, failing, skipped, error"],
    ["goalType=nope", `goalType must be one of: ${testTypes}`],
    ["type=nope", `type must be one of: ${testTypes}`],
    ["includeArchived=yes", "includeArchived must be true or false"],
  ];
  it.each(cases)("?%s is 400", async (query, message) => {
    expectError(await call("GET", `/v1/versions/${own.version}/results?${query}`), 400, message);
  });
});

describe("POST /v1/projects/{id}/tests", () => {
  const path = () => `/v1/projects/${own.project}/tests`;
  const wrongTypes: BodyCase[] = [
    ["name: 123", { ...validTest(), name: 123 }, "name must be a string"],
    ["description: 5", { ...validTest(), description: 5 }, "description must be a string"],
    ["subtype: 1", { ...validTest(), subtype: 1 }, "subtype must be a string"],
    ["thresholds: a string", { ...validTest(), thresholds: "x" }, "thresholds must be an array"],
    ["thresholds: an object", { ...validTest(), thresholds: threshold }, "thresholds must be an array"],
    ["thresholds[0]: a string", { ...validTest(), thresholds: ["x"] }, "thresholds[0] must be an object"],
    ["thresholds[0].operator: ~", { ...validTest(), thresholds: [{ ...threshold, operator: "~" }] }, `thresholds[0].operator must be one of: ${operators}`],
    ["thresholds[1].operator: =<", { ...validTest(), thresholds: [threshold, { ...threshold, operator: "=<" }] }, `thresholds[1].operator must be one of: ${operators}`],
    ["thresholds[0].insightName: 1", { ...validTest(), thresholds: [{ ...threshold, insightName: 1 }] }, "thresholds[0].insightName must be a string"],
    ["thresholds[0].thresholdMode: sometimes", { ...validTest(), thresholds: [{ ...threshold, thresholdMode: "sometimes" }] }, "thresholds[0].thresholdMode must be one of: automatic, manual"],
    ["thresholds[0].insightParameters: an object", { ...validTest(), thresholds: [{ ...threshold, insightParameters: {} }] }, "thresholds[0].insightParameters must be an array"],
    ["thresholds[0].insightParameters[0].name: 1", { ...validTest(), thresholds: [{ ...threshold, insightParameters: [{ name: 1, value: 1 }] }] }, "thresholds[0].insightParameters[0].name must be a string"],
    ["thresholds[0].value: an object", { ...validTest(), thresholds: [{ ...threshold, value: { a: 1 } }] }, `thresholds[0].value ${thresholdValue}`],
    ["thresholds[0].value: a list of numbers", { ...validTest(), thresholds: [{ ...threshold, value: [1, 2] }] }, `thresholds[0].value ${thresholdValue}`],
    ["archived: 1", { ...validTest(), archived: 1 }, "archived must be a boolean"],
    ["usesProductionData: a string", { ...validTest(), usesProductionData: "true" }, "usesProductionData must be a boolean"],
    ["evaluationWindow: a string", { ...validTest(), evaluationWindow: "3600" }, "evaluationWindow must be an integer"],
    ["evaluationWindow: 1.5", { ...validTest(), evaluationWindow: 1.5 }, "evaluationWindow must be an integer"],
    ["evaluationWindow: -1", { ...validTest(), evaluationWindow: -1 }, "evaluationWindow must not be negative"],
    ["delayWindow: -1", { ...validTest(), delayWindow: -1 }, "delayWindow must not be negative"],
    ["includePipelines: a string", { ...validTest(), includePipelines: randomUUID() }, "includePipelines must be an array"],
    ["includePipelines: [1]", { ...validTest(), includePipelines: [1] }, "includePipelines[0] must be a string"],
    ["name: 256 characters", { ...validTest(), name: "n".repeat(256) }, "name must be at most 255 characters"],
    ["subtype: not in the catalog", { ...validTest(), subtype: "rowcount" }, `subtype must be one of: ${subtypes.join(", ")}`],
  ];
  it.each(wrongTypes)("%s is 400", async (_, body, message) => {
    expectError(await call("POST", path(), { body }), 400, message);
  });

  const missing: BodyCase[] = [
    ["an empty body", {}, "description is required"],
    ["no description key", { name: "x", type: "integrity", subtype: "s", thresholds: [threshold] }, "description is required"],
    ["no thresholds key", { name: "x", description: null, type: "integrity", subtype: "s" }, "thresholds is required"],
    ["no name", { description: null, type: "integrity", subtype: "s", thresholds: [threshold] }, "name is required"],
    ["no type", { name: "x", description: null, subtype: "s", thresholds: [threshold] }, "type is required"],
    ["no subtype", { name: "x", description: null, type: "integrity", thresholds: [threshold] }, "subtype is required"],
  ];
  it.each(missing)("%s is 400", async (_, body, message) => {
    expectError(await call("POST", path(), { body }), 400, message);
  });

  const badIds: BodyCase[] = [
    ["includePipelines[0]", { ...validTest(), includePipelines: ["not-a-uuid"] }, "includePipelines[0] must be a UUID"],
    ["includePipelines[1]", { ...validTest(), includePipelines: [randomUUID(), "1234"] }, "includePipelines[1] must be a UUID"],
    ["excludePipelines[0]", { ...validTest(), excludePipelines: ["not-a-uuid"] }, "excludePipelines[0] must be a UUID"],
    ["originProjectVersionId", { ...validTest(), originProjectVersionId: "not-a-uuid" }, "originProjectVersionId must be a UUID"],
  ];
  it.each(badIds)("%s that is not a UUID is 400", async (_, body, message) => {
    expectError(await call("POST", path(), { body }), 400, message);
  });

  it("an originProjectVersionId from another workspace is 404", async () => {
    expectError(await call("POST", path(), { body: { ...validTest(), originProjectVersionId: other.version } }), 404, "Project version not found");
  });

  it("a threshold that leaves keys out gets the documented defaults (the SDKs' own example sends thresholds: [{}])", async () => {
    const response = await call("POST", path(), { body: { ...validTest("defaults"), subtype: "nullRowCount", thresholds: [{}, { measurement: "rowCount" }] } });
    expect(response.status).toBe(201);
    expect((response.body as { thresholds: unknown }).thresholds).toEqual([
      { insightName: "nullRowCount", insightParameters: null, measurement: "nullRowCount", operator: "<=", thresholdMode: "manual", value: 0 },
      { insightName: "nullRowCount", insightParameters: null, measurement: "rowCount", operator: ">", thresholdMode: "manual", value: 0 },
    ]);
  });

  it("unknown keys are ignored on create", async () => {
    const response = await call("POST", path(), { body: { ...validTest("extras"), suggested: true, number: 99, commentCount: 5, thresholds: [{ ...threshold, note: "x" }] } });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ name: "extras", suggested: false, number: 3, commentCount: 0 });
  });

  it("the failed creates made no test", async () => {
    const list = await call("GET", path());
    expect((list.body as { items: { name: string }[] }).items.map((x) => x.name)).toEqual(["t", "defaults", "extras"]);
  });
});

describe("GET /v1/projects/{id}/tests", () => {
  const cases: [string, string][] = [
    ["originVersionId=not-a-uuid", "originVersionId must be a UUID"],
    ["originVersionId=123", "originVersionId must be a UUID"],
    ["suggested=yes", "suggested must be true or false"],
    ["includeArchived=1", "includeArchived must be true or false"],
    ["usesProductionData=TRUE", "usesProductionData must be true or false"],
    ["goalType=nope", `goalType must be one of: ${testTypes}`],
    ["type=nope", `type must be one of: ${testTypes}`],
  ];
  it.each(cases)("?%s is 400", async (query, message) => {
    expectError(await call("GET", `/v1/projects/${own.project}/tests?${query}`), 400, message);
  });

  it("an originVersionId from another workspace finds nothing", async () => {
    const response = await call("GET", `/v1/projects/${own.project}/tests?originVersionId=${other.version}`);
    expect({ status: response.status, body: response.body }).toEqual({ status: 200, body: { items: [] } });
  });
});

describe("PUT /v1/projects/{id}/tests (bulk update)", () => {
  const path = () => `/v1/projects/${own.project}/tests`;
  const cases: [label: string, body: () => unknown, message: () => string][] = [
    ["an empty body", () => ({}), () => "payloads is required"],
    ["no payloads", () => ({ payloads: [] }), () => "payloads must hold at least one item"],
    ["payloads: an object", () => ({ payloads: { id: own.test } }), () => "payloads must be an array"],
    ["payloads[0]: a string", () => ({ payloads: [own.test] }), () => "payloads[0] must be an object"],
    ["401 payloads", () => ({ payloads: Array.from({ length: 401 }, () => ({ id: randomUUID() })) }), () => "payloads may hold at most 400 items"],
    ["payloads[0].id: not a UUID", () => ({ payloads: [{ id: "not-a-uuid" }] }), () => "payloads[0].id must be a UUID"],
    ["payloads[1].id: missing", () => ({ payloads: [{ id: own.test }, { name: "x" }] }), () => "payloads[1].id must be a UUID"],
    ["payloads[0].id: a number", () => ({ payloads: [{ id: 7 }] }), () => "payloads[0].id must be a string"],
    ["payloads[0].suggested: true", () => ({ payloads: [{ id: own.test, suggested: true }] }), () => "payloads[0].suggested may only be false"],
    ["payloads[0].suggested: a string", () => ({ payloads: [{ id: own.test, suggested: "false" }] }), () => "payloads[0].suggested must be a boolean"],
    ["payloads[0].archived: 0", () => ({ payloads: [{ id: own.test, archived: 0 }] }), () => "payloads[0].archived must be a boolean"],
    ["payloads[0].name: empty", () => ({ payloads: [{ id: own.test, name: "" }] }), () => "payloads[0].name is required"],
    ["payloads[0].thresholds: a string", () => ({ payloads: [{ id: own.test, thresholds: "x" }] }), () => "payloads[0].thresholds must be an array"],
    ["payloads[0].thresholds[0].operator: ~", () => ({ payloads: [{ id: own.test, thresholds: [{ ...threshold, operator: "~" }] }] }), () => `payloads[0].thresholds[0].operator must be one of: ${operators}`],
    ["payloads[0].thresholds[0] without insightName", () => ({ payloads: [{ id: own.test, thresholds: [{ measurement: "m", operator: "<", value: 1 }] }] }), () => "payloads[0].thresholds[0].insightName is required"],
    ["an ID given twice", () => ({ payloads: [{ id: own.test }, { id: own.test, archived: true }] }), () => `payloads[1].id ${own.test} is given more than once`],
    ["an ID given twice in different case", () => ({ payloads: [{ id: own.test }, { id: own.test.toUpperCase() }] }), () => `payloads[1].id ${own.test} is given more than once`],
  ];
  it.each(cases)("%s is 400, and nothing is queued", async (_, body, message) => {
    const before = await taskResultCount();
    expectError(await call("PUT", path(), { body: body() }), 400, message());
    expect(await taskResultCount()).toBe(before);
  });

  it("a bad payload is 400 before the project is looked up", async () => {
    const before = await taskResultCount();
    expectError(await call("PUT", `/v1/projects/${randomUUID()}/tests`, { body: { payloads: [{ id: "x" }] } }), 400, "payloads[0].id must be a UUID");
    expect(await taskResultCount()).toBe(before);
  });

  it("an unknown project is 404, and nothing is queued", async () => {
    const before = await taskResultCount();
    expectError(await call("PUT", `/v1/projects/${other.project}/tests`, { body: { payloads: [{ id: other.test, archived: true }] } }), 404, "Project not found");
    expect(await taskResultCount()).toBe(before);
  });

  it("400 payloads are accepted", async () => {
    const before = await taskResultCount();
    const response = await call("PUT", path(), { body: { payloads: Array.from({ length: 400 }, () => ({ id: randomUUID() })) } });
    expect(response.status).toBe(202);
    expect(await taskResultCount()).toBe(before + 1);
  });
});

describe("GET /v1/projects/{id}/inference-pipelines", () => {
  it("a name filter is a plain string, even one that looks like a pattern", async () => {
    const response = await call("GET", `/v1/projects/${own.project}/inference-pipelines?name=${encodeURIComponent("%_\\")}`);
    expect({ status: response.status, body: response.body }).toEqual({ status: 200, body: { items: [] } });
  });
});

describe("POST /v1/projects/{id}/inference-pipelines", () => {
  const path = () => `/v1/projects/${own.project}/inference-pipelines`;
  const cases: BodyCase[] = [
    ["name: 123", { name: 123, description: null }, "name must be a string"],
    ["description: 5", { name: "x", description: 5 }, "description must be a string"],
    ["an empty body", {}, "description is required"],
    ["no description key", { name: "x" }, "description is required"],
    ["no name", { description: null }, "name is required"],
    ["name: null", { name: null, description: "d" }, "name is required"],
    ["name: blank", { name: " ", description: "d" }, "name is required"],
    ["name: 256 characters", { name: "n".repeat(256), description: null }, "name must be at most 255 characters"],
  ];
  it.each(cases)("%s is 400", async (_, body, message) => {
    expectError(await call("POST", path(), { body }), 400, message);
  });

  it("unknown keys are ignored on create (referenceDatasetUri is for updates only)", async () => {
    const response = await call("POST", path(), { body: { name: "extras", description: null, referenceDatasetUri: "s3://b/ref.csv", status: "completed" } });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ name: "extras", status: "queued" });
    expect(response.body).not.toHaveProperty("referenceDatasetUri");
  });
});

describe("GET /v1/inference-pipelines/{id}", () => {
  it.each([["expand=nope"], ["expand=project,nope"], ["expand=Project"]])("?%s is 400", async (query) => {
    expectError(await call("GET", `/v1/inference-pipelines/${own.pipeline}?${query}`), 400, "expand must be one of: project, workspace");
  });
});

describe("PUT /v1/inference-pipelines/{id}", () => {
  const path = () => `/v1/inference-pipelines/${own.pipeline}`;
  const cases: BodyCase[] = [
    ["name: 123", { name: 123 }, "name must be a string"],
    ["name: empty", { name: "" }, "name is required"],
    ["description: []", { description: [] }, "description must be a string"],
    ["referenceDatasetUri: 5", { referenceDatasetUri: 5 }, "referenceDatasetUri must be a string"],
    ["referenceDatasetUri: 1001 characters", { referenceDatasetUri: "u".repeat(1001) }, "referenceDatasetUri must be at most 1000 characters"],
  ];
  it.each(cases)("%s is 400", async (_, body, message) => {
    expectError(await call("PUT", path(), { body }), 400, message);
  });

  it("unknown keys are ignored, and the failed updates changed nothing", async () => {
    const response = await call("PUT", path(), { body: { projectId: other.project, workspaceId: other.workspace, status: "failed" } });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ id: own.pipeline, name: "i", description: null, projectId: own.project, workspaceId: own.workspace, status: "queued" });
  });
});

describe("DELETE /v1/inference-pipelines/{id}", () => {
  it("deleting a pipeline twice is 404 the second time", async () => {
    const doomed = idOf(await call("POST", `/v1/projects/${own.project}/inference-pipelines`, { body: { name: "doomed", description: null } }));
    expect((await call("DELETE", `/v1/inference-pipelines/${doomed}`)).status).toBe(200);
    expectError(await call("DELETE", `/v1/inference-pipelines/${doomed}`), 404, "Inference pipeline not found");
  });
});

// ---- body size ------------------------------------------------------------------------------

/** A chunked request with no content-length, which fetch cannot send without a stream. */
function chunkedPost(baseUrl: string, path: string, key: string, chunks: string[]): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(baseUrl + path, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => {
        sent.push({ request: `POST ${path} (chunked)`, status: res.statusCode ?? 0 });
        resolve({ status: res.statusCode ?? 0, text });
      });
    });
    req.on("error", reject);
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}

describe("request body size", () => {
  it("the default cap is 1 MiB", async () => {
    const body = JSON.stringify({ name: "big", taskType: "llm-base", description: "x".repeat(1024 * 1024) });
    const response = await call("POST", "/v1/projects", { rawBody: body });
    expectError(response, 413, "The request body is larger than 1048576 bytes");
    expect(response.headers.get("connection")).toBe("close");
  });

  describe("with WARDEN_MAX_BODY_BYTES=2048", () => {
    let small: TestApp;
    let smallCall: Call;
    let smallProject: string;
    const cap = 2048;
    /** A create-project body of exactly `size` bytes. */
    const bodyOf = (size: number, name: string) => {
      const base = JSON.stringify({ name, taskType: "llm-base", description: "" });
      return JSON.stringify({ name, taskType: "llm-base", description: "x".repeat(size - base.length) });
    };

    beforeAll(async () => {
      small = await startTestApp({ env: { WARDEN_MAX_BODY_BYTES: String(cap) } });
      smallCall = recordingClient(small.baseUrl, small.adminKey);
      smallProject = idOf(await smallCall("POST", "/v1/projects", { body: { name: "p", taskType: "llm-base" } }));
    });
    afterAll(() => small?.stop());

    it("a body of exactly the cap is accepted", async () => {
      const body = bodyOf(cap, "exact");
      expect(Buffer.byteLength(body)).toBe(cap);
      expect((await smallCall("POST", "/v1/projects", { rawBody: body })).status).toBe(201);
    });

    it.each(bodyRoutes.filter((r) => !r.largeBody))("$method $template: one byte over the cap is 413", async (route) => {
      // The body is refused before the path is looked at, so the other IDs need not exist here.
      const ids = { ...own, project: smallProject };
      const response = await smallCall(route.method, fill(route.template, ids), { rawBody: bodyOf(cap + 1, "over") });
      expectError(response, 413, `The request body is larger than ${cap} bytes`);
      expect(response.headers.get("connection")).toBe("close");
    });

    it("a body far over the cap is 413", async () => {
      expectError(await smallCall("POST", "/v1/projects", { rawBody: bodyOf(500_000, "far") }), 413, `The request body is larger than ${cap} bytes`);
    });

    it("a body on a route that takes none is still capped", async () => {
      expectError(await smallCall("DELETE", `/v1/projects/${smallProject}`, { rawBody: "x".repeat(cap + 1) }), 413, `The request body is larger than ${cap} bytes`);
    });

    it("a chunked body without content-length is capped as it arrives", async () => {
      const response = await chunkedPost(small.baseUrl, "/v1/projects", small.adminKey, Array.from({ length: 5 }, () => "y".repeat(1000)));
      expect({ status: response.status, body: JSON.parse(response.text) as unknown }).toEqual({
        status: 413,
        body: errorBody(`The request body is larger than ${cap} bytes`, "resource_exhausted"),
      });
    });

    it("nothing over the cap was created, and the project is still there", async () => {
      const list = await smallCall("GET", "/v1/projects");
      expect((list.body as { items: { name: string }[] }).items.map((p) => p.name).sort()).toEqual(["exact", "p"]);
    });
  });
});

// ---- routing --------------------------------------------------------------------------------

describe("routing", () => {
  const unknown = [
    ["GET", "/v1/nope"],
    ["GET", "/"],
    ["GET", "/v1"],
    ["GET", "/v1/projects/"],
    ["POST", "/v1/workspaces"],
    ["GET", "/v2/projects"],
    ["GET", "/v1/PROJECTS"],
    ["GET", "/v1/projects/{project}/versions/extra"],
    ["GET", "/v1/tests/{test}"],
    ["DELETE", "/v1/versions/{version}/results/x"],
  ];
  it.each(unknown)("%s %s is 404", async (method, template) => {
    const path = fill(template, own);
    expectError(await call(method, path), 404, `No route for ${method} ${path}`);
  });

  it("an undecodable path segment is 404", async () => {
    expectError(await call("GET", "/v1/projects/%E0%A4%A/versions"), 404, "No route for GET /v1/projects/%E0%A4%A/versions");
  });

  const wrongMethod = [
    ["POST", "/v1/workspaces/{workspace}", "GET, PUT"],
    ["GET", "/v1/workspaces/{workspace}/api-keys", "POST"],
    ["GET", "/v1/workspaces/{workspace}/api-keys/{apiKey}", "DELETE"],
    ["DELETE", "/v1/workspaces/{workspace}/invites", "GET, POST"],
    ["PUT", "/v1/projects", "GET, POST"],
    ["DELETE", "/v1/projects", "GET, POST"],
    ["GET", "/v1/projects/{project}", "DELETE, PATCH"],
    ["PUT", "/v1/projects/{project}", "DELETE, PATCH"],
    ["PATCH", "/v1/projects/{project}/versions", "GET, POST"],
    ["DELETE", "/v1/versions/{version}", "GET"],
    ["POST", "/v1/versions/{version}/results", "GET"],
    ["DELETE", "/v1/projects/{project}/tests", "GET, POST, PUT"],
    ["PUT", "/v1/projects/{project}/inference-pipelines", "GET, POST"],
    ["POST", "/v1/inference-pipelines/{pipeline}", "DELETE, GET, PUT"],
    ["PATCH", "/v1/inference-pipelines/{pipeline}", "DELETE, GET, PUT"],
    ["DELETE", "/v1/task-results/{task}", "GET"],
    ["OPTIONS", "/v1/projects", "GET, POST"],
  ];
  it.each(wrongMethod)("%s %s is 405 with allow: %s", async (method, template, allow) => {
    const path = fill(template, own);
    const response = await call(method, path, { key: null });
    expectError(response, 405, `${method} is not allowed on ${path}; use ${allow}`);
    expect(response.headers.get("allow")).toBe(allow);
  });

  it("HEAD is answered as GET, without a body", async () => {
    const response = await call("HEAD", "/v1/projects");
    expect({ status: response.status, type: response.headers.get("content-type"), text: response.text }).toEqual({
      status: 200,
      type: "application/json",
      text: "",
    });
  });
});

// ---- hosts -------------------------------------------------------------------------------------

/** A request with headers fetch will not send, Host among them. */
function rawRequest(method: string, path: string, headers: Record<string, string>, body?: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      t.baseUrl + path,
      { method, headers: { authorization: `Bearer ${t.adminKey}`, ...headers }, agent: false, setHost: !("host" in headers) },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () => {
          sent.push({ request: `${method} ${path} (host ${JSON.stringify(headers)})`, status: res.statusCode ?? 0 });
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text });
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

describe("a bad Host or X-Forwarded-Host", () => {
  const badHosts: [label: string, host: string][] = [
    ...["a b", "evil.example:99999", "[::1", "%", "", "host/path", "user@host", "ex ample.com:80"].map((host): [string, string] => [JSON.stringify(host), host]),
    ["400 characters", "x".repeat(400)],
  ];
  /** List routes that hold two items or more here, so perPage=1 has a next page. */
  let paged: string[];

  beforeAll(async () => {
    await call("POST", "/v1/projects", { body: { name: "second", taskType: "llm-base" } });
    await call("POST", `/v1/projects/${own.project}/versions`, { body: validVersion() });
    await call("POST", `/v1/projects/${own.project}/tests`, { body: validTest("second") });
    await call("POST", `/v1/projects/${own.project}/inference-pipelines`, { body: { name: "second", description: null } });
    await call("POST", `/v1/workspaces/${own.workspace}/invites`, { body: { emails: ["a@example.com", "b@example.com"] } });
    paged = [];
    for (const route of listRoutes) {
      const path = `${fill(route.template, own)}?perPage=1`;
      if ((await call("GET", path)).headers.get("x-next")) paged.push(path);
    }
    expect(paged.length).toBeGreaterThanOrEqual(5);
  });

  it.each(badHosts)("Host %s: every x-next is built on the address the caller reached", async (_, host) => {
    for (const path of paged) {
      const response = await rawRequest("GET", path, { host });
      expect({ path, status: response.status, next: response.headers["x-next"] }).toEqual({ path, status: 200, next: `${t.baseUrl}${path}&page=2` });
    }
  });

  it.each(badHosts)("X-Forwarded-Host %s is ignored: x-next is built on Host", async (_, forwarded) => {
    for (const path of paged) {
      const response = await rawRequest("GET", path, { host: "warden.example:8443", "x-forwarded-host": forwarded, "x-forwarded-proto": "https" });
      expect({ path, status: response.status, next: response.headers["x-next"] }).toEqual({
        path,
        status: 200,
        next: `https://warden.example:8443${path}&page=2`,
      });
    }
  });

  it("an X-Forwarded-Proto that is not http or https is ignored; a good X-Forwarded-Host is used", async () => {
    const path = paged[0]!;
    const response = await rawRequest("GET", path, { host: "a b", "x-forwarded-host": "proxy.example, inner.example", "x-forwarded-proto": "javascript" });
    expect({ status: response.status, next: response.headers["x-next"] }).toEqual({ status: 200, next: `http://proxy.example${path}&page=2` });
  });

  it("HTTP/1.0 without any Host: x-next on the address the caller reached", async () => {
    const path = paged[0]!;
    // Written, not ended: Node's HTTP server drops a request whose client half-closes first.
    const socket = net.connect(Number(new URL(t.baseUrl).port), "127.0.0.1");
    socket.write(`GET ${path} HTTP/1.0\r\nAuthorization: Bearer ${t.adminKey}\r\n\r\n`);
    let text = "";
    for await (const chunk of socket) text += (chunk as Buffer).toString("latin1");
    expect(text.split("\r\n")[0]).toBe("HTTP/1.1 200 OK");
    expect(text).toContain(`\r\nx-next: ${t.baseUrl}${path}&page=2\r\n`);
  });

  it.each(badHosts)("the bulk update's taskResultUrl with Host %s is on the address the caller reached, and it works", async (_, host) => {
    const body = JSON.stringify({ payloads: [{ id: own.test, archived: false }] });
    const response = await rawRequest("PUT", `/v1/projects/${own.project}/tests`, { host, "content-type": "application/json" }, body);
    expect(response.status).toBe(202);
    const handle = JSON.parse(response.text) as { taskResultId: string; taskResultUrl: string };
    expect(handle.taskResultUrl).toBe(`${t.baseUrl}/v1/task-results/${handle.taskResultId}`);
    expect((await call("GET", handle.taskResultUrl.slice(t.baseUrl.length))).status).toBe(200);
  });

  it.each(badHosts)("the bulk update's taskResultUrl with X-Forwarded-Host %s is on Host", async (_, forwarded) => {
    const body = JSON.stringify({ payloads: [{ id: own.test, archived: false }] });
    const response = await rawRequest("PUT", `/v1/projects/${own.project}/tests`, { host: "warden.example", "x-forwarded-host": forwarded, "content-type": "application/json" }, body);
    expect(response.status).toBe(202);
    const handle = JSON.parse(response.text) as { taskResultId: string; taskResultUrl: string };
    expect(handle.taskResultUrl).toBe(`http://warden.example/v1/task-results/${handle.taskResultId}`);
  });

  it("an absolute-form request target that is not a URL is 400", async () => {
    const socket = net.connect(Number(new URL(t.baseUrl).port), "127.0.0.1");
    socket.write(`GET http://[::1/v1/projects HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.adminKey}\r\nConnection: close\r\n\r\n`);
    let text = "";
    for await (const chunk of socket) text += (chunk as Buffer).toString("latin1");
    sent.push({ request: "GET http://[::1/v1/projects", status: Number(text.slice(9, 12)) });
    expect(text.split("\r\n")[0]).toBe("HTTP/1.1 400 Bad Request");
    expect(JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4))).toEqual(errorBody("The request target is not a valid URL", "invalid_argument"));
  });
});

// ---- last --------------------------------------------------------------------------------------

describe("across everything above", () => {
  it("no response was a 5xx", () => {
    expect(sent.length).toBeGreaterThan(500);
    expect(sent.filter((s) => s.status >= 500)).toEqual([]);
  });
});

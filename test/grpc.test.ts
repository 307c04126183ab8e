import { randomUUID } from "node:crypto";
import http2 from "node:http2";
import net from "node:net";
import { gzipSync } from "node:zlib";
import * as grpc from "@grpc/grpc-js";
import { create, createFileRegistry, fromBinary, type DescService } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, FileDescriptorSetSchema, type FileDescriptorProto } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as reflectionV1 from "../gen/grpc/reflection/v1/reflection_pb.js";
import * as reflectionV1alpha from "../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { CommitService } from "../gen/warden/commits/v1/commits_pb.js";
import { InferencePipelineService } from "../gen/warden/pipelines/v1/pipelines_pb.js";
import { ProjectService, TaskType } from "../gen/warden/projects/v1/projects_pb.js";
import { TaskService, TaskStatus } from "../gen/warden/tasks/v1/tasks_pb.js";
import { Operator, TestService, TestType } from "../gen/warden/tests/v1/tests_pb.js";
import { WorkspaceService } from "../gen/warden/workspaces/v1/workspaces_pb.js";
import { Role } from "../gen/warden/api/v1/common_pb.js";
import { isUndecodableInput } from "../src/platform/decode-errors.ts";
import { generateManagementKey } from "../src/workspaces/keys.ts";
import { addWorkspace } from "./support/workspace.ts";
import { startTestApp, type TestApp } from "./support/app.ts";
import { createGrpcClient, type GrpcClient } from "./support/grpc-client.ts";

const wardenServices = [
  "warden.workspaces.v1.WorkspaceService",
  "warden.projects.v1.ProjectService",
  "warden.commits.v1.CommitService",
  "warden.tests.v1.TestService",
  "warden.pipelines.v1.InferencePipelineService",
  "warden.tasks.v1.TaskService",
];

let t: TestApp;
/** host:port, as a gRPC client dials it. */
let address: string;
const grpcClients: { close(): void }[] = [];

beforeAll(async () => {
  t = await startTestApp();
  address = new URL(t.baseUrl).host;
});
afterAll(async () => {
  for (const client of grpcClients) client.close();
  await t?.stop();
});

/** A stock grpc-js client, over HTTP/2 without TLS; with the admin key unless told otherwise. */
function grpcClient<S extends DescService>(service: S, key: string | null = t.adminKey): GrpcClient<S> {
  const client = createGrpcClient(service, address, key ?? undefined);
  grpcClients.push(client);
  return client;
}

function bearer(key: string): Interceptor {
  return (next) => (req) => {
    req.header.set("authorization", `Bearer ${key}`);
    return next(req);
  };
}

/** A Connect client over HTTP/1.1, with the admin key unless told otherwise. */
function connectClient<S extends DescService>(service: S, key: string = t.adminKey): Client<S> {
  return createClient(service, createConnectTransport({ baseUrl: t.baseUrl, httpVersion: "1.1", interceptors: [bearer(key)] }));
}


async function newProject(name: string) {
  const { project } = await grpcClient(ProjectService).createProject({ name, taskType: TaskType.LLM_BASE });
  if (!project) throw new Error("CreateProject answered no project");
  return project;
}

describe("each service over Connect and over a stock gRPC client", () => {
  it("ProjectService: a project made over gRPC is seen and changed over Connect, and back", async () => {
    const project = await newProject("made-over-grpc");
    expect(project).toMatchObject({ name: "made-over-grpc", taskType: TaskType.LLM_BASE, versionCount: 0 });
    // HTTP/2 has no Host header: the link's host comes from :authority.
    expect(project.links?.app).toBe(`${t.baseUrl}/app/projects/${project.id}`);

    const connect = connectClient(ProjectService);
    const listed = await connect.listProjects({ name: "made-over-grpc" });
    expect(listed.items.map((p) => p.id)).toEqual([project.id]);

    await connect.updateProject({ projectId: project.id, description: "set over Connect" });
    const again = await grpcClient(ProjectService).listProjects({ name: "made-over-grpc" });
    expect(again.items).toHaveLength(1);
    expect(again.items[0]).toMatchObject({ id: project.id, description: "set over Connect", workspaceId: project.workspaceId });
  });

  it("WorkspaceService: invites made over Connect are listed over gRPC", async () => {
    const { workspaceId } = await newProject("workspace-probe");
    const { workspace } = await grpcClient(WorkspaceService).getWorkspace({ workspaceId });
    expect(workspace).toMatchObject({ id: workspaceId, name: "Default", slug: "default" });

    const made = await connectClient(WorkspaceService).createInvites({ workspaceId, emails: ["grpc@example.com"], role: Role.VIEWER });
    expect(made.items).toHaveLength(1);
    const invites = await grpcClient(WorkspaceService).listInvites({ workspaceId });
    expect(invites.items.map((i) => [i.id, i.email, i.role])).toContainEqual([made.items[0]!.id, "grpc@example.com", Role.VIEWER]);
  });

  it("CommitService: a version committed over gRPC is read over Connect", async () => {
    const project = await newProject("commits");
    const { projectVersion } = await grpcClient(CommitService).createProjectVersion({
      projectId: project.id,
      commit: { message: "first over gRPC", fileSize: 42n },
      storageUri: "s3://bucket/model.tar.gz",
    });
    expect(projectVersion).toMatchObject({ projectId: project.id, commit: { message: "first over gRPC", fileSize: 42n } });

    const read = await connectClient(CommitService).getProjectVersion({ projectVersionId: projectVersion!.id });
    expect(read.projectVersion).toMatchObject({ id: projectVersion!.id, commit: { message: "first over gRPC", storageUri: "s3://bucket/model.tar.gz" } });
    const listed = await grpcClient(CommitService).listProjectVersions({ projectId: project.id });
    expect(listed.items.map((v) => v.id)).toEqual([projectVersion!.id]);
  });

  it("InferencePipelineService: a pipeline made over Connect is read, renamed and deleted over gRPC", async () => {
    const project = await newProject("pipelines");
    const { inferencePipeline } = await connectClient(InferencePipelineService).createInferencePipeline({
      projectId: project.id,
      name: "production",
    });
    const id = inferencePipeline!.id;
    const pipelines = grpcClient(InferencePipelineService);
    expect((await pipelines.getInferencePipeline({ inferencePipelineId: id })).inferencePipeline).toMatchObject({ id, name: "production" });
    const renamed = await pipelines.updateInferencePipeline({ inferencePipelineId: id, name: "staging" });
    expect(renamed.inferencePipeline?.name).toBe("staging");
    expect((await pipelines.listInferencePipelines({ projectId: project.id })).items.map((p) => p.name)).toEqual(["staging"]);
    await pipelines.deleteInferencePipeline({ inferencePipelineId: id });
    await expect(connectClient(InferencePipelineService).getInferencePipeline({ inferencePipelineId: id })).rejects.toMatchObject({
      code: Code.NotFound,
    });
  });

  it("TestService and TaskService: a test made over gRPC, a bulk update queued, its task read both ways", async () => {
    const project = await newProject("tests");
    const tests = grpcClient(TestService);
    const { test } = await tests.createTest({
      projectId: project.id,
      name: "No empty answers",
      type: TestType.INTEGRITY,
      subtype: "characterLength",
      thresholds: [
        { insightName: "characterLength", measurement: "minCharacterLength", operator: Operator.GREATER, value: { kind: { case: "numberValue", value: 0 } } },
      ],
    });
    expect(test).toMatchObject({ number: 1, name: "No empty answers", type: TestType.INTEGRITY });
    expect(test?.thresholds[0]?.value?.kind).toEqual({ case: "numberValue", value: 0 });

    const listed = await connectClient(TestService).listTests({ projectId: project.id });
    expect(listed.items.map((x) => x.id)).toEqual([test!.id]);

    const { taskHandle } = await tests.updateTests({ projectId: project.id, payloads: [{ id: test!.id, name: "Renamed" }] });
    const taskResultId = taskHandle!.taskResultId;
    expect(taskHandle!.taskResultUrl).toMatch(new RegExp(`/v1/task-results/${taskResultId}$`));

    const overGrpc = await grpcClient(TaskService).getTaskResult({ taskResultId });
    expect(overGrpc.taskResult).toMatchObject({ id: taskResultId, type: "tests.bulk_update" });
    // Workers run in this process, so the task may be anywhere on its way; it never fails.
    expect([TaskStatus.QUEUED, TaskStatus.RUNNING, TaskStatus.COMPLETED]).toContain(overGrpc.taskResult!.status);
    const overConnect = await connectClient(TaskService).getTaskResult({ taskResultId });
    expect(overConnect.taskResult).toMatchObject({ id: taskResultId, type: "tests.bulk_update" });

    await expect(grpcClient(TaskService).getTaskResult({ taskResultId: randomUUID() })).rejects.toMatchObject({
      code: grpc.status.NOT_FOUND,
      details: "Task result not found",
    });
  });

  it("gRPC-Web reaches the same services", async () => {
    const project = await newProject("over-grpc-web");
    const transport = createGrpcWebTransport({ baseUrl: t.baseUrl, httpVersion: "1.1", interceptors: [bearer(t.adminKey)] });
    const listed = await createClient(ProjectService, transport).listProjects({ name: "over-grpc-web" });
    expect(listed.items.map((p) => p.id)).toEqual([project.id]);
  });
});

describe("errors over gRPC carry the gRPC status and the message", () => {
  it("a call without a key is UNAUTHENTICATED", async () => {
    const err = await grpcClient(ProjectService, null).listProjects({}).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: 16 });
    expect(grpc.status.UNAUTHENTICATED).toBe(16);
    // grpc-message is percent-encoded on the wire. Connect encodes with encodeURIComponent and
    // grpc-js decodes with decodeURI, which leaves reserved characters such as ":" or "," encoded.
    // This message has none of them, so a stock grpc-js caller reads it as it is.
    expect((err as grpc.ServiceError).details).toBe("Missing API key. Send it as a bearer token in the Authorization header.");
  });

  it("a call with an unknown key is UNAUTHENTICATED", async () => {
    await expect(grpcClient(WorkspaceService, generateManagementKey()).getWorkspace({ workspaceId: randomUUID() })).rejects.toMatchObject({
      code: grpc.status.UNAUTHENTICATED,
      details: "Invalid API key.",
    });
  });

  it("another workspace's project is NOT_FOUND, over gRPC and over Connect", async () => {
    const { key: otherKey } = await addWorkspace(t.app);
    const { project: theirs } = await grpcClient(ProjectService, otherKey).createProject({ name: "theirs", taskType: TaskType.LLM_BASE });
    const projectId = theirs!.id;

    await expect(grpcClient(ProjectService).updateProject({ projectId, name: "mine now" })).rejects.toMatchObject({
      code: grpc.status.NOT_FOUND,
      details: "Project not found",
    });
    await expect(grpcClient(CommitService).listProjectVersions({ projectId })).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
    const overConnect = await connectClient(ProjectService).deleteProject({ projectId }).then(
      () => undefined,
      (err: unknown) => ConnectError.from(err),
    );
    expect(overConnect).toMatchObject({ code: Code.NotFound, rawMessage: "Project not found" });

    // Their project is untouched, and only theirs to see.
    const mine = await grpcClient(ProjectService).listProjects({ name: "theirs" });
    expect(mine.items).toEqual([]);
    const listedByThem = await connectClient(ProjectService, otherKey).listProjects({});
    expect(listedByThem.items.map((p) => [p.id, p.name])).toEqual([[projectId, "theirs"]]);
  });

  it("a bad argument is INVALID_ARGUMENT", async () => {
    await expect(grpcClient(ProjectService).updateProject({ projectId: "not-a-uuid" })).rejects.toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
    });
  });
});

describe("bytes that do not decode are INVALID_ARGUMENT on every door", () => {
  const path = "/warden.projects.v1.ProjectService/ListProjects";
  /** Protobuf that cannot be parsed, and what protobuf-es says of it. */
  const undecodable: [label: string, bytes: Buffer, message: string][] = [
    ["a lone tag byte", Buffer.from([0xff]), "parse binary: premature EOF"],
    ["wire type 7", Buffer.from([0x0f]), "parse binary: illegal tag: field no 1 wire type 7"],
    ["a varint of eleven bytes", Buffer.from([0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]), "parse binary: invalid varint"],
    ["a length past the end", Buffer.from([0x0a, 0x05, 0x61]), "parse binary: premature EOF"],
  ];

  function envelope(flags: number, bytes: Buffer): Buffer {
    const head = Buffer.alloc(5);
    head[0] = flags;
    head.writeUInt32BE(bytes.length, 1);
    return Buffer.concat([head, bytes]);
  }

  /** One gRPC call over HTTP/2 with prior knowledge, its body as given. */
  async function rawGrpc(body: Buffer, headers: Record<string, string> = {}): Promise<{ headers: http2.IncomingHttpHeaders; trailers: http2.IncomingHttpHeaders }> {
    const session = http2.connect(t.baseUrl);
    try {
      const req = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", authorization: `Bearer ${t.adminKey}`, ...headers });
      req.end(body);
      return await new Promise((resolve, reject) => {
        let responseHeaders: http2.IncomingHttpHeaders = {};
        let trailers: http2.IncomingHttpHeaders = {};
        req.on("response", (h) => (responseHeaders = h));
        req.on("trailers", (h) => (trailers = h));
        req.on("data", () => undefined);
        req.on("error", reject);
        req.on("close", () => resolve({ headers: responseHeaders, trailers }));
      });
    } finally {
      session.close();
    }
  }

  it.each(undecodable)("Connect with application/proto, %s: 400 invalid_argument", async (_, bytes, message) => {
    const res = await fetch(t.baseUrl + path, { method: "POST", headers: { "content-type": "application/proto", authorization: `Bearer ${t.adminKey}` }, body: bytes });
    expect({ status: res.status, type: res.headers.get("content-type"), body: await res.json() }).toEqual({
      status: 400,
      type: "application/json",
      body: { code: "invalid_argument", message },
    });
  });

  it("Connect with a gzip body that does not inflate: 400 invalid_argument", async () => {
    const res = await fetch(t.baseUrl + path, {
      method: "POST",
      headers: { "content-type": "application/proto", "content-encoding": "gzip", authorization: `Bearer ${t.adminKey}` },
      body: gzipSync(Buffer.from([0x08, 0x01])).subarray(0, 8),
    });
    expect({ status: res.status, body: await res.json() }).toEqual({ status: 400, body: { code: "invalid_argument", message: "decompression failed" } });
  });

  it.each(undecodable)("gRPC-Web, %s: grpc-status 3", async (_, bytes, message) => {
    const res = await fetch(t.baseUrl + path, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto", authorization: `Bearer ${t.adminKey}` },
      body: envelope(0, bytes),
    });
    const trailer = `grpc-message: ${encodeURIComponent(message)}\r\ngrpc-status: 3\r\n`;
    expect({ status: res.status, body: Buffer.from(await res.arrayBuffer()) }).toEqual({ status: 200, body: envelope(0x80, Buffer.from(trailer)) });
  });

  it.each(undecodable)("gRPC over HTTP/2, %s: grpc-status 3", async (_, bytes, message) => {
    const { headers, trailers } = await rawGrpc(envelope(0, bytes));
    expect({ status: headers[":status"], grpcStatus: trailers["grpc-status"], grpcMessage: decodeURIComponent(String(trailers["grpc-message"])) }).toEqual({
      status: 200,
      grpcStatus: "3",
      grpcMessage: message,
    });
  });

  it("gRPC: an envelope flagged compressed without an encoding, and gzip that does not inflate: grpc-status 3", async () => {
    const unannounced = await rawGrpc(envelope(1, Buffer.from([0x08, 0x01])));
    expect([unannounced.trailers["grpc-status"], decodeURIComponent(String(unannounced.trailers["grpc-message"]))]).toEqual([
      "3",
      "received compressed envelope, but do not know how to decompress",
    ]);
    for (const bytes of [gzipSync(Buffer.from([0x08, 0x01])).subarray(0, 8), Buffer.from("not gzip at all")]) {
      const broken = await rawGrpc(envelope(1, bytes), { "grpc-encoding": "gzip" });
      expect([broken.trailers["grpc-status"], decodeURIComponent(String(broken.trailers["grpc-message"]))]).toEqual(["3", "decompression failed"]);
    }
  });

  it("a stock grpc-js client sending undecodable bytes gets INVALID_ARGUMENT", async () => {
    const Client = grpc.makeGenericClientConstructor(
      {
        listProjects: {
          path,
          requestStream: false,
          responseStream: false,
          requestSerialize: (bytes: Buffer) => bytes,
          requestDeserialize: (bytes: Buffer) => bytes,
          responseSerialize: (bytes: Buffer) => bytes,
          responseDeserialize: (bytes: Buffer) => bytes,
        },
      },
      "raw",
    );
    const client = new Client(address, grpc.credentials.createInsecure());
    grpcClients.push(client);
    const metadata = new grpc.Metadata();
    metadata.set("authorization", `Bearer ${t.adminKey}`);
    const err = await new Promise<grpc.ServiceError | null>((resolve) => {
      client.makeUnaryRequest(path, (b: Buffer) => b, (b: Buffer) => b, Buffer.from([0x0f]), metadata, (e) => resolve(e));
    });
    expect(err?.code).toBe(grpc.status.INVALID_ARGUMENT);
  });

  it("a message that decodes is still served, and a real internal error would still be internal", async () => {
    const { headers, trailers } = await rawGrpc(envelope(0, Buffer.alloc(0)));
    expect([headers[":status"], trailers["grpc-status"]]).toEqual([200, "0"]);
    expect(isUndecodableInput(new ConnectError("serialize binary: oops", Code.Internal))).toBe(false);
    expect(isUndecodableInput(new ConnectError("parse binary: premature EOF", Code.Unknown))).toBe(false);
    expect(isUndecodableInput(new ConnectError("parse binary: premature EOF", Code.Internal))).toBe(true);
  });
});

describe("callers' junk outside the message", () => {
  /** A Connect call over a raw HTTP/1 connection, so that any Host (or none) can be sent. */
  async function rawConnect(head: string, body: string): Promise<{ status: number; body: unknown }> {
    const socket = net.connect(Number(new URL(t.baseUrl).port), "127.0.0.1");
    socket.write(`${head}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nAuthorization: Bearer ${t.adminKey}\r\nConnection: close\r\n\r\n${body}`);
    let text = "";
    for await (const chunk of socket) text += (chunk as Buffer).toString("utf8");
    return { status: Number(text.slice(9, 12)), body: JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4)) as unknown };
  }

  it("a Host that is not a host, or none at all (HTTP/1.0), is served, with links on the address the caller reached", async () => {
    const { id } = await newProject("reached-by-junk-host");
    for (const head of [
      "POST /warden.projects.v1.ProjectService/ListProjects HTTP/1.1\r\nHost: a b\r\n",
      "POST /warden.projects.v1.ProjectService/ListProjects HTTP/1.1\r\nHost: [::1\r\n",
      "POST /warden.projects.v1.ProjectService/ListProjects HTTP/1.0\r\n",
    ]) {
      const res = await rawConnect(head, JSON.stringify({ name: "reached-by-junk-host" }));
      expect(res).toEqual({ status: 200, body: { items: [expect.objectContaining({ id, links: { app: `${t.baseUrl}/app/projects/${id}` } })] } });
    }
  });

  it("an enum value the enum does not have is INVALID_ARGUMENT, not an internal error", async () => {
    const cases: [string, unknown, string][] = [
      ["/warden.gateway.v1.GatewayAdminService/CreateAccessRule", { effect: 8, subject: 1, models: ["m"] }, "effect has an unknown value: 8"],
      ["/warden.gateway.v1.GatewayUsageService/GetUsage", { groupBy: 401 }, "groupBy has an unknown value: 401"],
      ["/warden.projects.v1.ProjectService/ListProjects", { taskType: 99 }, "an enum field has an unknown value: 99"],
    ];
    for (const [path, body, message] of cases) {
      const res = await fetch(t.baseUrl + path, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${t.adminKey}` }, body: JSON.stringify(body) });
      expect({ path, status: res.status, body: await res.json() }).toEqual({ path, status: 400, body: { code: "invalid_argument", message } });
    }
  });
});

describe("gRPC server reflection", () => {
  type ReflectionResponse = reflectionV1.ServerReflectionResponse;

  function filesOf(response: ReflectionResponse | undefined): FileDescriptorProto[] {
    if (response?.messageResponse.case !== "fileDescriptorResponse") {
      throw new Error(`expected files, got ${JSON.stringify(response?.messageResponse)}`);
    }
    return response.messageResponse.value.fileDescriptorProto.map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes));
  }

  /** The files with every import before its importer, as a FileDescriptorSet wants; throws on a missing import. */
  function importsFirst(files: FileDescriptorProto[]): FileDescriptorProto[] {
    const byName = new Map(files.map((file) => [file.name, file]));
    const ordered: FileDescriptorProto[] = [];
    const visit = (file: FileDescriptorProto) => {
      if (ordered.includes(file)) return;
      for (const name of file.dependency) {
        const dependency = byName.get(name);
        if (!dependency) throw new Error(`${file.name} imports ${name}, which was not sent`);
        visit(dependency);
      }
      ordered.push(file);
    };
    files.forEach(visit);
    return ordered;
  }

  it("lists every service, without an API key", async () => {
    const [answer] = await grpcClient(reflectionV1.ServerReflection, null).serverReflectionInfo([
      { messageRequest: { case: "listServices", value: "" } },
    ]);
    expect(answer?.messageResponse.case).toBe("listServicesResponse");
    const names = answer?.messageResponse.case === "listServicesResponse" ? answer.messageResponse.value.service.map((s) => s.name) : [];
    expect(names).toEqual(expect.arrayContaining([...wardenServices, "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"]));
  });

  it("describes a service by symbol: its file and everything the file imports", async () => {
    const [answer] = await grpcClient(reflectionV1.ServerReflection, null).serverReflectionInfo([
      { host: "warden", messageRequest: { case: "fileContainingSymbol", value: "warden.projects.v1.ProjectService" } },
    ]);
    expect(answer?.validHost).toBe("warden");
    expect(answer?.originalRequest?.messageRequest).toEqual({ case: "fileContainingSymbol", value: "warden.projects.v1.ProjectService" });
    const files = filesOf(answer);
    expect(files[0]?.name).toBe("warden/projects/v1/projects.proto");
    expect(files[0]?.service[0]?.name).toBe("ProjectService");
    expect(files[0]?.service[0]?.method.map((m) => m.name)).toContain("ListProjects");
    expect(files.map((f) => f.name)).toEqual(
      expect.arrayContaining(["warden/api/v1/annotations.proto", "google/protobuf/descriptor.proto", "google/protobuf/timestamp.proto"]),
    );

    // What came back is a complete, self-contained schema: it builds a registry on its own.
    const registry = createFileRegistry(create(FileDescriptorSetSchema, { file: importsFirst(files) }));
    const listProjects = registry.getService("warden.projects.v1.ProjectService")?.methods.find((m) => m.name === "ListProjects");
    expect(listProjects?.input.typeName).toBe("warden.projects.v1.ListProjectsRequest");
    expect(listProjects?.output.field.items?.message?.typeName).toBe("warden.projects.v1.Project");
  });

  it("answers many queries on one stream, errors included, and sends each import once", async () => {
    const answers = await grpcClient(reflectionV1.ServerReflection, null).serverReflectionInfo([
      { messageRequest: { case: "fileContainingSymbol", value: "warden.projects.v1.ProjectService.ListProjects" } },
      { messageRequest: { case: "fileContainingSymbol", value: "warden.nope.v1.NopeService" } },
      { messageRequest: { case: "fileByFilename", value: "warden/tasks/v1/tasks.proto" } },
      { messageRequest: { case: "fileByFilename", value: "warden/nope.proto" } },
      { messageRequest: { case: "fileContainingSymbol", value: "warden.tests.v1.Operator" } },
      { messageRequest: { case: "allExtensionNumbersOfType", value: "google.protobuf.MethodOptions" } },
      { messageRequest: { case: "fileContainingExtension", value: { containingType: "google.protobuf.MethodOptions", extensionNumber: 50004 } } },
    ]);
    expect(answers).toHaveLength(7);
    expect(filesOf(answers[0])[0]?.name).toBe("warden/projects/v1/projects.proto");
    expect(answers[1]?.messageResponse).toEqual({
      case: "errorResponse",
      value: expect.objectContaining({ errorCode: grpc.status.NOT_FOUND, errorMessage: "Symbol not found: warden.nope.v1.NopeService" }),
    });
    // tasks.proto imports annotations.proto, which the first answer already carried.
    const tasks = filesOf(answers[2]).map((f) => f.name);
    expect(tasks[0]).toBe("warden/tasks/v1/tasks.proto");
    expect(tasks).not.toContain("warden/api/v1/annotations.proto");
    expect(answers[3]?.messageResponse).toEqual({
      case: "errorResponse",
      value: expect.objectContaining({ errorCode: grpc.status.NOT_FOUND, errorMessage: "File not found: warden/nope.proto" }),
    });
    expect(filesOf(answers[4])[0]?.name).toBe("warden/tests/v1/tests.proto");
    expect(answers[5]?.messageResponse).toEqual({
      case: "allExtensionNumbersResponse",
      value: expect.objectContaining({ baseTypeName: "google.protobuf.MethodOptions", extensionNumber: expect.arrayContaining([50001, 50004]) }),
    });
    expect(filesOf(answers[6])[0]?.name).toBe("warden/api/v1/annotations.proto");
  });

  it("answers the same over v1alpha", async () => {
    const answers = await grpcClient(reflectionV1alpha.ServerReflection, null).serverReflectionInfo([
      { messageRequest: { case: "listServices", value: "*" } },
      { messageRequest: { case: "fileContainingSymbol", value: "warden.tasks.v1.TaskService" } },
    ]);
    const [list, file] = answers;
    const names = list?.messageResponse.case === "listServicesResponse" ? list.messageResponse.value.service.map((s) => s.name) : [];
    expect(names).toEqual(expect.arrayContaining(wardenServices));
    expect(file?.messageResponse.case).toBe("fileDescriptorResponse");
    const bytes = file?.messageResponse.case === "fileDescriptorResponse" ? file.messageResponse.value.fileDescriptorProto[0] : undefined;
    expect(bytes && fromBinary(FileDescriptorProtoSchema, bytes).service.map((s) => s.name)).toEqual(["TaskService"]);
  });
});

import type { DescService } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import { CommitService } from "../gen/warden/commits/v1/commits_pb.js";
import { GatewayAdminService } from "../gen/warden/gateway/v1/admin_pb.js";
import { GatewayUsageService } from "../gen/warden/gateway/v1/usage_pb.js";
import { PipelineDataService } from "../gen/warden/pipelines/v1/data_pb.js";
import { InferencePipelineService } from "../gen/warden/pipelines/v1/pipelines_pb.js";
import { ProjectService } from "../gen/warden/projects/v1/projects_pb.js";
import { StorageService } from "../gen/warden/storage/v1/storage_pb.js";
import { TaskService } from "../gen/warden/tasks/v1/tasks_pb.js";
import { TestService } from "../gen/warden/tests/v1/tests_pb.js";
import { WorkspaceService } from "../gen/warden/workspaces/v1/workspaces_pb.js";
import { createCommitService, type CommitServiceOptions } from "./commits/service.ts";
import { createGatewayAdminService, type GatewayAdminOptions } from "./gateway/admin/service.ts";
import { createGatewayUsageService, type UsageServiceOptions } from "./gateway/usage/service.ts";
import { createPipelineDataService, type DataServiceOptions } from "./pipelines/data-service.ts";
import { createInferencePipelineService } from "./pipelines/service.ts";
import { createProjectService } from "./projects/service.ts";
import { createStorageService, type StorageServiceOptions } from "./storage/service.ts";
import { reflectionRoutes } from "./reflection/service.ts";
import { createTaskService } from "./tasks/service.ts";
import { createTestService, type TestServiceOptions } from "./tests/service.ts";
import { createWorkspaceService } from "./workspaces/service.ts";

/** Every service that the API port serves, over Connect, gRPC, gRPC-Web and REST. */
export const services: DescService[] = [
  WorkspaceService,
  ProjectService,
  CommitService,
  TestService,
  InferencePipelineService,
  PipelineDataService,
  TaskService,
  GatewayAdminService,
  GatewayUsageService,
  StorageService,
];

export type RouteOptions = CommitServiceOptions & TestServiceOptions & GatewayAdminOptions & UsageServiceOptions & StorageServiceOptions & {
  pipelineData: DataServiceOptions;
};

/** The one place where RPCs are registered. */
export function routes(options: RouteOptions) {
  return (router: ConnectRouter) => {
    router.service(WorkspaceService, createWorkspaceService());
    router.service(ProjectService, createProjectService(options));
    router.service(CommitService, createCommitService(options));
    router.service(TestService, createTestService(options));
    router.service(InferencePipelineService, createInferencePipelineService(options));
    router.service(PipelineDataService, createPipelineDataService(options.pipelineData));
    router.service(TaskService, createTaskService());
    router.service(GatewayAdminService, createGatewayAdminService(options));
    router.service(GatewayUsageService, createGatewayUsageService(options));
    router.service(StorageService, createStorageService(options));
    reflectionRoutes(services)(router);
  };
}

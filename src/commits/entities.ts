import { defineEntity, p, type InferEntity } from "@mikro-orm/core";

export const ProjectVersionEntity = defineEntity({
  name: "ProjectVersion",
  tableName: "project_version",
  properties: {
    id: p.uuid().primary(),
    projectId: p.uuid(),
    workspaceId: p.uuid(),
    authorId: p.uuid().nullable(),
    message: p.text(),
    storageUri: p.text(),
    fileSize: p.bigint("number").nullable(),
    gitCommitRef: p.text().nullable(),
    gitCommitSha: p.text().nullable(),
    gitCommitUrl: p.text().nullable(),
    archived: p.boolean(),
    dateArchived: p.datetime().nullable(),
    status: p.string().length(16),
    statusMessage: p.text().nullable(),
    deploymentStatus: p.string().length(64),
    dateCreated: p.datetime(),
  },
});
export type ProjectVersion = InferEntity<typeof ProjectVersionEntity>;

export const commitEntities = [ProjectVersionEntity];

import { defineEntity, p, type InferEntity } from "@mikro-orm/core";

export const ProjectEntity = defineEntity({
  name: "Project",
  tableName: "project",
  properties: {
    id: p.uuid().primary(),
    workspaceId: p.uuid(),
    creatorId: p.uuid().nullable(),
    name: p.string().length(255),
    description: p.text().nullable(),
    source: p.string().length(8).nullable(),
    taskType: p.string().length(32),
    purpose: p.text().nullable(),
    modelTypes: p.array(),
    modelDeveloper: p.text().nullable(),
    dataRetentionDays: p.integer().nullable(),
    /** The number the next test of this project gets; bumped under a row lock. */
    testSeq: p.integer(),
    dateCreated: p.datetime(),
    dateUpdated: p.datetime(),
  },
});
export type Project = InferEntity<typeof ProjectEntity>;

export const projectEntities = [ProjectEntity];

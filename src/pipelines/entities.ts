import { defineEntity, p, type InferEntity } from "@mikro-orm/core";

export const InferencePipelineEntity = defineEntity({
  name: "InferencePipeline",
  tableName: "inference_pipeline",
  properties: {
    id: p.uuid().primary(),
    projectId: p.uuid(),
    workspaceId: p.uuid(),
    name: p.string().length(255),
    description: p.text().nullable(),
    /** Write-only: accepted on update, never returned. */
    referenceDatasetUri: p.string().length(1000).nullable(),
    status: p.string().length(16),
    statusMessage: p.text().nullable(),
    dateLastEvaluated: p.datetime().nullable(),
    dateLastSampleReceived: p.datetime().nullable(),
    dateOfNextEvaluation: p.datetime().nullable(),
    totalRecordsCount: p.bigint("number").nullable(),
    /** The config of the latest rows streamed or loaded, as given. */
    dataConfig: p.json<Record<string, unknown>>().nullable(),
    /** Rows older than this many days are deleted; null: the project's dataRetentionDays, or kept. */
    retentionDays: p.integer().nullable(),
    dateCreated: p.datetime(),
    dateUpdated: p.datetime(),
  },
});
export type InferencePipeline = InferEntity<typeof InferencePipelineEntity>;

export const pipelineEntities = [InferencePipelineEntity];

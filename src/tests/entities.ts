import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import type { JsonValue } from "@bufbuild/protobuf";

/** A threshold as stored: the REST JSON of warden.tests.v1.Threshold. */
export type StoredThreshold = { [key: string]: JsonValue };

export const TestEntity = defineEntity({
  name: "Test",
  tableName: "test",
  properties: {
    id: p.uuid().primary(),
    projectId: p.uuid(),
    workspaceId: p.uuid(),
    number: p.integer(),
    name: p.string().length(255),
    description: p.text().nullable(),
    type: p.string().length(16),
    subtype: p.string().length(64),
    thresholds: p.json<StoredThreshold[]>(),
    archived: p.boolean(),
    suggested: p.boolean(),
    usesMlModel: p.boolean(),
    usesTrainingDataset: p.boolean(),
    usesValidationDataset: p.boolean(),
    usesReferenceDataset: p.boolean(),
    usesProductionData: p.boolean(),
    evaluationWindow: p.integer().nullable(),
    delayWindow: p.integer().nullable(),
    defaultToAllPipelines: p.boolean().nullable(),
    includePipelines: p.array().nullable(),
    excludePipelines: p.array().nullable(),
    includeHistoricalData: p.boolean().nullable(),
    commentCount: p.integer(),
    creatorId: p.uuid().nullable(),
    originProjectVersionId: p.uuid().nullable(),
    dateCreated: p.datetime(),
    dateUpdated: p.datetime(),
    dateArchived: p.datetime().nullable(),
  },
});
export type Test = InferEntity<typeof TestEntity>;

export interface StoredExpectedValue {
  measurement: string;
  lowerThreshold: number | null;
  upperThreshold: number | null;
  /** What was measured; absent in results stored before it was kept. */
  measuredValue?: number;
}

export const TestResultEntity = defineEntity({
  name: "TestResult",
  tableName: "test_result",
  properties: {
    id: p.uuid().primary(),
    testId: p.uuid(),
    workspaceId: p.uuid(),
    projectVersionId: p.uuid().nullable(),
    inferencePipelineId: p.uuid().nullable(),
    status: p.string().length(16),
    statusMessage: p.text().nullable(),
    expectedValues: p.json<StoredExpectedValue[]>(),
    dateDataStarts: p.datetime().nullable(),
    dateDataEnds: p.datetime().nullable(),
    dateCreated: p.datetime(),
    dateUpdated: p.datetime(),
  },
});
export type TestResult = InferEntity<typeof TestResultEntity>;

export const testEntities = [TestEntity, TestResultEntity];

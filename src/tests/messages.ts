import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { TestResultStatus, TestType, type TestResultSchema, type TestSchema } from "../../gen/warden/tests/v1/tests_pb.js";
import { enumValue } from "../platform/enums.ts";
import type { Test, TestResult } from "./entities.ts";
import { loadThresholds } from "./thresholds.ts";

/** Tests and their results as the contract shapes them. */

export function testMessage(test: Test): MessageInitShape<typeof TestSchema> {
  return {
    id: test.id,
    number: test.number,
    name: test.name,
    description: test.description ?? undefined,
    type: enumValue(TestType, test.type),
    subtype: test.subtype,
    thresholds: loadThresholds(test.thresholds),
    archived: test.archived,
    suggested: test.suggested,
    usesMlModel: test.usesMlModel,
    usesTrainingDataset: test.usesTrainingDataset,
    usesValidationDataset: test.usesValidationDataset,
    usesReferenceDataset: test.usesReferenceDataset,
    usesProductionData: test.usesProductionData,
    evaluationWindow: test.evaluationWindow ?? undefined,
    delayWindow: test.delayWindow ?? undefined,
    defaultToAllPipelines: test.defaultToAllPipelines ?? undefined,
    includePipelines: test.includePipelines ?? [],
    excludePipelines: test.excludePipelines ?? [],
    includeHistoricalData: test.includeHistoricalData ?? undefined,
    commentCount: test.commentCount,
    creatorId: test.creatorId ?? undefined,
    dateCreated: timestampFromDate(test.dateCreated),
    dateUpdated: timestampFromDate(test.dateUpdated),
    dateArchived: test.dateArchived ? timestampFromDate(test.dateArchived) : undefined,
    originProjectVersionId: test.originProjectVersionId ?? undefined,
  };
}

export function resultMessage(result: TestResult, test: Test): MessageInitShape<typeof TestResultSchema> {
  return {
    id: result.id,
    dateCreated: timestampFromDate(result.dateCreated),
    dateUpdated: timestampFromDate(result.dateUpdated),
    dateDataStarts: result.dateDataStarts ? timestampFromDate(result.dateDataStarts) : undefined,
    dateDataEnds: result.dateDataEnds ? timestampFromDate(result.dateDataEnds) : undefined,
    inferencePipelineId: result.inferencePipelineId ?? undefined,
    projectVersionId: result.projectVersionId ?? undefined,
    status: enumValue(TestResultStatus, result.status),
    statusMessage: result.statusMessage ?? undefined,
    goalId: test.id,
    goal: testMessage(test),
    expectedValues: result.expectedValues.map((v) => ({
      measurement: v.measurement,
      lowerThreshold: v.lowerThreshold ?? undefined,
      upperThreshold: v.upperThreshold ?? undefined,
      measuredValue: v.measuredValue ?? undefined,
    })),
  };
}

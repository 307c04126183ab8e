import type { MessageInitShape } from "@bufbuild/protobuf";
import { QueryOrder, type FilterQuery } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import { TestResultStatus, TestType, type TestResultSchema } from "../../gen/warden/tests/v1/tests_pb.js";
import { enumName } from "../platform/enums.ts";
import { invalidArgument } from "../platform/errors.ts";
import { paged, type Page } from "../platform/pagination.ts";
import { TestEntity, TestResultEntity, type Test, type TestResult } from "./entities.ts";
import { resultMessage } from "./messages.ts";

type ResultMessage = MessageInitShape<typeof TestResultSchema>;

/** The filters every results list takes (spec/evaluation-contract.md, "Results"). */
export interface ResultFilters {
  /** Whose results: a version's, a pipeline's or a test's. */
  of: { projectVersionId: string } | { inferencePipelineId: string } | { testId: string };
  workspaceId: string;
  /** Which tests: of this project, not archived unless `includeArchived`, of these types. */
  tests: { projectId?: string; ids?: string[]; includeArchived: boolean; types: TestType[] };
  statuses: TestResultStatus[];
  /** UNIX seconds: results whose window ends after `start`, and starts before `end`. */
  start?: bigint;
  end?: bigint;
  /** Narrower still, for a test's own list. */
  inferencePipelineId?: string;
  projectVersionId?: string;
}

/** Newest window first; results of commits, which have no window, after, newest first. */
const newestFirst = [
  { dateDataStarts: QueryOrder.DESC_NULLS_LAST },
  { dateCreated: QueryOrder.DESC },
  { id: QueryOrder.DESC },
] as const;

function seconds(field: string, value: bigint): Date {
  // Dates past the year 275,760 do not exist in JavaScript.
  if (value < -8_640_000_000_000n || value > 8_640_000_000_000n) throw invalidArgument(`${field} is out of range`);
  return new Date(Number(value) * 1000);
}

/** One page of results, with their tests. */
export async function listResults(em: EntityManager, filters: ResultFilters, page: Page): Promise<{ items: ResultMessage[]; nextPage: number | undefined }> {
  const testWhere: FilterQuery<Test> = { workspaceId: filters.workspaceId };
  if (filters.tests.projectId !== undefined) testWhere.projectId = filters.tests.projectId;
  if (filters.tests.ids !== undefined) testWhere.id = { $in: filters.tests.ids };
  if (!filters.tests.includeArchived) testWhere.archived = false;
  if (filters.tests.types.length > 0) testWhere.type = { $in: filters.tests.types.map((t) => enumName(TestType, t)) };
  const tests = await em.find(TestEntity, testWhere);
  if (tests.length === 0) return { items: [], nextPage: undefined };
  const byId = new Map(tests.map((t) => [t.id, t]));

  const where: FilterQuery<TestResult> = { ...filters.of, workspaceId: filters.workspaceId, testId: { $in: [...byId.keys()] } };
  if (filters.statuses.length > 0) where.status = { $in: filters.statuses.map((s) => enumName(TestResultStatus, s)) };
  if (filters.start !== undefined) where.dateDataEnds = { $gt: seconds("startTimestamp", filters.start) };
  if (filters.end !== undefined) where.dateDataStarts = { $lt: seconds("endTimestamp", filters.end) };
  if (filters.inferencePipelineId !== undefined) where.inferencePipelineId = filters.inferencePipelineId;
  if (filters.projectVersionId !== undefined) where.projectVersionId = filters.projectVersionId;
  const rows = await em.find(TestResultEntity, where, { orderBy: [...newestFirst], limit: page.limit + 1, offset: page.offset });
  const { items, nextPage } = paged(rows, page);
  return { items: items.map((result) => resultMessage(result, byId.get(result.testId)!)), nextPage };
}

/** A test's newest result whose status is not `skipped`, whatever a list's filters. */
export async function lastUnskippedResult(em: EntityManager, test: Test): Promise<ResultMessage | undefined> {
  const skipped = enumName(TestResultStatus, TestResultStatus.SKIPPED);
  const result = await em.findOne(TestResultEntity, { testId: test.id, status: { $ne: skipped } }, { orderBy: [...newestFirst] });
  return result ? resultMessage(result, test) : undefined;
}

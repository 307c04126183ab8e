import type { EntityManager } from "@mikro-orm/postgresql";
import { TestResultStatus } from "../../gen/warden/tests/v1/tests_pb.js";
import { countsBy } from "../platform/counts.ts";
import { enumName } from "../platform/enums.ts";

export interface GoalCounts {
  goal: number;
  development: number;
  monitoring: number;
}

/** Live (not archived) tests per project: all, development mode, monitoring mode. */
export function countTestsByProject(em: EntityManager, projectIds: readonly string[]): Promise<Map<string, GoalCounts>> {
  return countsBy(em, "test", "project_id", projectIds, {
    goal: "count(*) filter (where not archived)",
    development: "count(*) filter (where not archived and not uses_production_data)",
    monitoring: "count(*) filter (where not archived and uses_production_data)",
  });
}

export interface ResultCounts {
  passing: number;
  failing: number;
  total: number;
}

/** Results per commit or per pipeline (`key` is the column to group by). */
export function countResultsBy(
  em: EntityManager,
  key: "project_version_id" | "inference_pipeline_id",
  ids: readonly string[],
): Promise<Map<string, ResultCounts>> {
  return countsBy(em, "test_result", key, ids, {
    passing: `count(*) filter (where status = '${enumName(TestResultStatus, TestResultStatus.PASSING)}')`,
    failing: `count(*) filter (where status = '${enumName(TestResultStatus, TestResultStatus.FAILING)}')`,
    total: "count(*)",
  });
}

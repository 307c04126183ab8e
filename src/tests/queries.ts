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

const resultCounts = {
  passing: `count(*) filter (where status = '${enumName(TestResultStatus, TestResultStatus.PASSING)}')`,
  failing: `count(*) filter (where status = '${enumName(TestResultStatus, TestResultStatus.FAILING)}')`,
  total: "count(*)",
};

/** A commit's results: one per development test. */
export function countResultsOfCommits(em: EntityManager, ids: readonly string[]): Promise<Map<string, ResultCounts>> {
  return countsBy(em, "test_result", "project_version_id", ids, resultCounts);
}

/**
 * A pipeline's goal counts: the latest window's result of each of its tests (not archived), as a
 * pipeline's status answers "do my tests pass now?", not how many windows ever passed.
 */
export async function countLatestResultsOfPipelines(em: EntityManager, ids: readonly string[]): Promise<Map<string, ResultCounts>> {
  const counts = new Map<string, ResultCounts>();
  if (ids.length === 0) return counts;
  const rows = await em.execute<{ key: string; passing: number; failing: number; total: number }[]>(
    `select inference_pipeline_id as key, ${Object.entries(resultCounts).map(([name, expr]) => `(${expr})::int as "${name}"`).join(", ")}
       from (select distinct on (r.inference_pipeline_id, r.test_id) r.inference_pipeline_id, r.status
               from test_result r join test t on t.id = r.test_id and not t.archived
              where r.inference_pipeline_id in (${ids.map(() => "?").join(", ")})
              order by r.inference_pipeline_id, r.test_id, r.date_data_starts desc) latest
      group by inference_pipeline_id`,
    [...ids],
  );
  for (const row of rows) counts.set(String(row.key), { passing: Number(row.passing), failing: Number(row.failing), total: Number(row.total) });
  return counts;
}

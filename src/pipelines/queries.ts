import type { EntityManager } from "@mikro-orm/postgresql";
import { countsBy } from "../platform/counts.ts";

/** Inference pipeline counts per project. */
export async function countPipelinesByProject(em: EntityManager, projectIds: readonly string[]): Promise<Map<string, number>> {
  const counts = await countsBy(em, "inference_pipeline", "project_id", projectIds, { n: "count(*)" });
  return new Map([...counts].map(([id, c]) => [id, c.n]));
}

import type { Test } from "../entities.ts";

/** Seconds, when a monitoring test sets no evaluationWindow (our choice: hourly). */
export const defaultEvaluationWindow = 3600;

/**
 * The pipelines a monitoring test is evaluated on, of its project's: all of them unless
 * `defaultToAllPipelines` is false, then `includePipelines`; minus `excludePipelines`.
 */
export function pipelinesOfTest(test: Test, projectPipelines: readonly string[]): string[] {
  const excluded = new Set(test.excludePipelines ?? []);
  const included = test.includePipelines ?? [];
  const applies = test.defaultToAllPipelines === false ? projectPipelines.filter((id) => included.includes(id)) : projectPipelines;
  return applies.filter((id) => !excluded.has(id));
}

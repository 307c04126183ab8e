import { expect } from "vitest";
import type { Call } from "./http.ts";
import { setUpWaitMs, until } from "./wait.ts";

export interface ResultItem {
  id: string;
  status: string;
  statusMessage: string;
  dateDataStarts: string;
}

export interface EvaluateAnswer {
  message: string;
  pipelineCount: number;
  requestedStartTimestamp: number;
  requestedEndTimestamp: number;
  tasks: { taskResultUrl: string; taskResultId: string; pipelineId: string }[];
}

/** POST /v1/tests/{id}/evaluate, waits for every task it queued, and answers the test's results, newest window first. */
export async function evaluated(call: Call, testId: string, body: Record<string, unknown>): Promise<ResultItem[]> {
  return (await evaluatedWithAnswer(call, testId, body)).results;
}

/** As {@link evaluated}, with the evaluate call's own answer. */
export async function evaluatedWithAnswer(call: Call, testId: string, body: Record<string, unknown>): Promise<{ answer: EvaluateAnswer; results: ResultItem[] }> {
  const queued = await call("POST", `/v1/tests/${testId}/evaluate`, { body });
  expect(queued.status, queued.text).toBe(200);
  const answer = queued.body as EvaluateAnswer;
  for (const task of answer.tasks) {
    const path = new URL(task.taskResultUrl).pathname;
    await until(async () => ((await call("GET", path)).body as { status: string }).status === "completed", "the evaluation task", setUpWaitMs);
  }
  return { answer, results: ((await call("GET", `/v1/tests/${testId}/results`)).body as { items: ResultItem[] }).items };
}

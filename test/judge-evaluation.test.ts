/**
 * LLM tests judged by the workspace's judge model, called through Warden's own gateway: the
 * judge's key and model are workspace settings, its calls go through the gateway to a fake
 * provider on loopback, which answers every row with the score its model name carries.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";
import { fakeModel } from "./support/fake-providers.ts";
import { setUpGateway, type GatewayFixture } from "./support/gateway-setup.ts";
import { errorBody } from "./support/http.ts";
import { evaluated } from "./support/evaluation.ts";

let t: TestApp;
let g: GatewayFixture;
let projectId: string;
let pipelineId: string;

const hour = 3600;
/** 2025-11-24 08:00 UTC. */
const A = 1_763_971_200;
const judgeModel = fakeModel("gpt-judge", { text: '{"score": 0.75, "reason": "Polite enough"}' });

beforeAll(async () => {
  t = await startTestApp();
  g = await setUpGateway(t);
  projectId = ((await g.admin("POST", "/v1/projects", { body: { name: "judged", taskType: "llm-base" } })).body as { id: string }).id;
  pipelineId = ((await g.admin("POST", `/v1/projects/${projectId}/inference-pipelines`, { body: { name: "prod", description: null } })).body as { id: string }).id;
  const config = { outputColumnName: "output", inputVariableNames: ["question"], inferenceIdColumnName: "id", timestampColumnName: "t" };
  const rows = [
    { id: "r1", t: A + 1, question: "Where is Paris?", output: "In France, dear friend." },
    { id: "r2", t: A + 2, question: "Where is Rome?", output: "Italy." },
  ];
  expect((await g.admin("POST", `/v1/inference-pipelines/${pipelineId}/data-stream`, { body: { config, rows } })).status).toBe(200);
});
afterAll(async () => {
  await g?.close();
  await t?.stop();
});

async function evaluateRubric(): Promise<{ status: string; statusMessage: string }[]> {
  const made = await g.admin("POST", `/v1/projects/${projectId}/tests`, {
    body: {
      name: `polite ${Math.random()}`, description: null, type: "performance", subtype: "llmRubricThresholdV2", usesProductionData: true, evaluationWindow: hour,
      thresholds: [{ measurement: "criteria0MeanScore", insightParameters: [{ name: "criteria_list", value: ["The answer is polite"] }], operator: ">=", value: 0.5 }],
    },
  });
  expect(made.status, made.text).toBe(201);
  const testId = (made.body as { id: string }).id;
  return evaluated(g.admin, testId, { startTimestamp: A, endTimestamp: A + hour });
}

describe("the judge of a workspace's LLM tests", () => {
  it("is skipped, saying so, until a judge is set", async () => {
    expect((await evaluateRubric()).map((r) => [r.status, r.statusMessage])).toEqual([
      ["skipped", "No judge model is set for this workspace (PATCH /v1/gateway/workspace-settings: judgeModel and judgeKey)"],
    ]);
  });

  it("is set by the workspace's admins; its key is sealed and never shown", async () => {
    const refused = await g.admin("PATCH", "/v1/gateway/workspace-settings", { body: { judgeModel: "m", judgeKey: "not-a-key" } });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual(errorBody("judgeKey must be a gateway key of this instance (sk-wg-…)", "invalid_argument"));
    const set = await g.admin("PATCH", "/v1/gateway/workspace-settings", { body: { judgeModel, judgeKey: g.key } });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ inferencePipelineId: null, judgeModel, judgeKeySet: true, dateUpdated: expect.any(String) });
    const read = await g.admin("GET", "/v1/gateway/workspace-settings");
    expect(read.body).toEqual(set.body);
    expect(read.text).not.toContain(g.key);
  });

  it("scores each row through the gateway, and the result holds the mean score", async () => {
    g.openai.reset();
    expect((await evaluateRubric()).map((r) => [r.status, r.statusMessage])).toEqual([
      ["passing", "criteria0MeanScore = 0.75 (threshold >= 0.5: holds)"],
    ]);
    // One call per row, through the gateway (which holds the provider's key) to the provider.
    const calls = g.openai.requests.filter((r) => r.path === "/v1/responses");
    expect(calls).toHaveLength(2);
    const sent = calls.map((r) => JSON.stringify(r.body)).join("\n");
    expect(sent).toContain("The answer is polite");
    expect(sent).toContain("In France, dear friend.");
    expect(sent).toContain("Where is Rome?");
    expect(calls[0]!.headers.authorization).toBe(`Bearer ${g.openai.apiKey}`);
  });
});

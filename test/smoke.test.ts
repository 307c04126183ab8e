import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";
import { client, type Call } from "./support/http.ts";

let t: TestApp;
let call: Call;

beforeAll(async () => {
  t = await startTestApp();
  call = client(t.baseUrl, t.adminKey);
});
afterAll(() => t?.stop());

describe("smoke", () => {
  it("creates and lists a project", async () => {
    const created = await call("POST", "/v1/projects", { body: { name: "p", taskType: "llm-base" } });
    expect(created.status).toBe(201);
    const list = await call("GET", "/v1/projects");
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ items: [created.body] });
  });
});

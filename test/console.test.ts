/**
 * The web console in a real headless Chromium, against a Warden this file starts: sign-in, the
 * pages a person uses (a pipeline's chart and a failing window's rows, a commit's results, gateway
 * usage, the request log and its filters, keys with their secret shown once, providers, routing,
 * limits, guardrails), at 1280 px and at phone size. Every request the browser makes is recorded:
 * none may leave Warden's origin. A VIEWER key sees no edit control, and the API refuses its edits.
 * Screenshots of each page go to test-artifacts/console/.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";
import { launchChromium, screenshot, sidewaysOverflow, unnamedControls } from "./support/browser.ts";
import { seedConsole, type ConsoleSeed } from "./support/console-seed.ts";

let t: TestApp;
let seed: ConsoleSeed;
let browser: Browser;
let origin: string;
/** Every URL any page of any context asked for, and problems the pages reported. */
const requested: string[] = [];
const pageProblems: string[] = [];

/** A browser context that records its requests, refuses any to another origin, and notes page errors. */
async function newContext(viewport = { width: 1280, height: 900 }): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport, serviceWorkers: "block" });
  context.on("request", (request) => requested.push(request.url()));
  // Belt and braces: a request elsewhere is also cut, so a test cannot pass on a network that answers.
  await context.route("**/*", (route) => (new URL(route.request().url()).origin === origin ? route.continue() : route.abort("blockedbyclient")));
  context.on("page", watch);
  return context;
}

function watch(page: Page): void {
  page.on("pageerror", (error) => pageProblems.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    // A refused API call (the viewer's 403, a probe) is the browser logging a failed fetch: expected.
    if (message.type() === "error" && !/status of (401|403)/.test(message.text())) pageProblems.push(`console: ${message.text()}`);
  });
}

async function signIn(page: Page, key: string): Promise<void> {
  await page.goto(`${origin}/app/`);
  // By keyboard, as a person without a mouse would: the key field, then Enter.
  await page.getByLabel("Workspace API key").focus();
  await page.keyboard.type(key);
  await page.keyboard.press("Enter");
  await page.getByRole("heading", { level: 1, name: "Projects" }).waitFor();
}

/** A page of the console by its path, once its heading is there and nothing is loading. */
async function open(page: Page, path: string, heading: string | RegExp): Promise<void> {
  await page.goto(`${origin}/app${path}`);
  await page.getByRole("heading", { level: 1, name: heading }).waitFor();
  await expect.poll(() => page.locator('[role="status"]').count()).toBe(0);
}

beforeAll(async () => {
  t = await startTestApp();
  origin = t.baseUrl;
  seed = await seedConsole(t);
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await seed?.gateway.close();
  await t?.stop();
});

describe("the console, signed in with the admin key", () => {
  let context: BrowserContext;
  let page: Page;
  beforeAll(async () => {
    context = await newContext();
    page = await context.newPage();
  });
  afterAll(() => context?.close());

  it("signs in with a key kept in sessionStorage only, never in a URL", async () => {
    await page.goto(`${origin}/app/`);
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await screenshot(page, "sign-in");
    await signIn(page, t.adminKey);
    expect(await page.evaluate(() => sessionStorage.getItem("warden.apiKey"))).toBe(t.adminKey);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    expect(await context.cookies()).toEqual([]);
    expect(requested.some((url) => url.includes(t.adminKey))).toBe(false);
    await page.getByRole("link", { name: "support-bot" }).waitFor();
    await screenshot(page, "projects");
  }, 60_000);

  it("shows a project's pipelines and commits, and a commit's test results", async () => {
    await page.getByRole("link", { name: "support-bot" }).click();
    await page.getByRole("heading", { level: 1, name: "support-bot" }).waitFor();
    await page.getByRole("link", { name: "production" }).waitFor();
    await screenshot(page, "project");
    await page.getByRole("link", { name: "New commit" }).click();
    await page.getByRole("heading", { level: 1, name: "New commit" }).waitFor();
    const results = page.getByRole("table");
    await results.getByText("no duplicate answers").waitFor();
    expect(await results.getByText("failing").count()).toBe(1);
    expect(await results.getByText("passing").count()).toBe(1);
    await screenshot(page, "commit");
  }, 60_000);

  it("charts each test's value per window against its threshold, and opens a failing window's rows", async () => {
    // The path links.app gives for the pipeline.
    const link = ((await (await fetch(`${origin}/v1/inference-pipelines/${seed.pipelineId}`, { headers: { authorization: `Bearer ${t.adminKey}` } })).json()) as { links: { app: string } }).links.app;
    expect(link).toBe(`${origin}/app/projects/${seed.projectId}/inference-pipelines/${seed.pipelineId}`);
    await page.goto(link);
    await page.getByRole("heading", { level: 1, name: "production" }).waitFor();
    const card = page.getByTestId("test-card").filter({ hasText: "p90 latency under half a second" });
    const chart = card.getByTestId("window-chart");
    await chart.waitFor();
    expect(await chart.locator("g.window").count()).toBe(8);
    expect(await chart.locator('g.window[data-status="failing"]').count()).toBe(1);
    expect(await chart.locator('g.window[data-status="passing"]').count()).toBe(7);
    expect(await chart.locator(".threshold").count()).toBeGreaterThan(0);
    await screenshot(page, "pipeline");

    await chart.locator('g.window[data-status="failing"]').click();
    const rows = card.getByTestId("window-rows");
    await rows.locator("tbody tr").first().waitFor();
    const ids = await rows.locator("tbody th code").allTextContents();
    expect(ids.sort()).toEqual([...seed.failingWindowRows].sort());
    expect(page.url()).toContain("?result=");
    await screenshot(page, "pipeline-window-rows");

    // Filtered by a column: the one slow row of the window.
    await rows.getByLabel("Column").fill("latency");
    await rows.getByLabel("Operator").selectOption(">");
    await rows.getByLabel("Value").fill("1300");
    await rows.getByRole("button", { name: "Filter" }).click();
    await expect.poll(() => rows.locator("tbody tr").count()).toBe(1);
    expect(await rows.locator("tbody th code").allTextContents()).toEqual(["w4-r2"]);
    // And by text.
    await rows.getByLabel("Column").fill("");
    await rows.getByLabel("Text contains").fill("long answer");
    await rows.getByRole("button", { name: "Filter" }).click();
    await expect.poll(() => rows.locator("tbody th code").allTextContents()).toEqual(["w4-r2"]);
  }, 60_000);

  it("reaches a window's rows by keyboard from the window table", async () => {
    const card = page.getByTestId("test-card").filter({ hasText: "at least three rows an hour" });
    await card.locator("summary").focus();
    await page.keyboard.press("Enter");
    const button = card.getByRole("button", { name: /^Rows of/ }).first();
    await button.focus();
    await page.keyboard.press("Enter");
    await card.getByTestId("window-rows").locator("tbody tr").first().waitFor();
    expect(await card.getByTestId("window-rows").locator("tbody tr").count()).toBeGreaterThan(0);
  }, 60_000);

  it("charts gateway usage by key and model, in tokens and dollars", async () => {
    await open(page, "/gateway/usage", "Gateway usage");
    expect(await page.getByTestId("usage-chart").count()).toBe(2);
    expect(await page.getByTestId("usage-chart").first().locator("rect").count()).toBeGreaterThan(0);
    await screenshot(page, "usage");
    await page.getByLabel("By", { exact: true }).selectOption("model");
    await page.getByRole("rowheader", { name: "claude-x" }).waitFor();
    await screenshot(page, "usage-by-model");
  }, 60_000);

  it("lists the request log, and filters it by model", async () => {
    await open(page, "/gateway/request-log", "Request log");
    const log = page.getByTestId("request-log");
    const total = Object.values(seed.requestsByModel).reduce((a, b) => a + b, 0);
    expect(await log.locator("tbody tr").count()).toBe(total);
    await screenshot(page, "request-log");
    await page.getByLabel("Model").fill("claude-x");
    await page.getByRole("button", { name: "Apply" }).click();
    await expect.poll(() => log.locator("tbody tr").count()).toBe(seed.requestsByModel["claude-x"]);
    expect(new Set(await log.locator("tbody tr td:nth-child(4)").allTextContents())).toEqual(new Set(["claude-x"]));
    expect(page.url()).toContain("model=claude-x");
    await page.getByLabel("HTTP status").fill("502");
    await page.getByLabel("Model").fill("");
    await page.getByRole("button", { name: "Apply" }).click();
    await expect.poll(() => log.locator("tbody tr").count()).toBe(1);
    await screenshot(page, "request-log-filtered");
  }, 60_000);

  it("creates a gateway key and shows its secret once, then disables it", async () => {
    await open(page, "/gateway/keys", "Gateway keys");
    await page.getByLabel("Name").fill("console-made");
    await page.getByRole("button", { name: "Create key" }).click();
    const secret = (await page.getByTestId("secret").textContent())!.trim();
    expect(secret).toMatch(/^sk-wg-/);
    await screenshot(page, "keys-secret");
    // The secret works at the gateway.
    const models = await fetch(`${t.gatewayUrl}/v1/models`, { headers: { authorization: `Bearer ${secret}` } });
    expect(models.status).toBe(200);
    await page.getByRole("button", { name: "I have stored it" }).click();
    expect(await page.getByTestId("secret").count()).toBe(0);
    expect(await page.content()).not.toContain(secret);
    await page.reload();
    await page.getByRole("rowheader", { name: "console-made" }).waitFor();
    expect(await page.content()).not.toContain(secret);
    expect(await page.evaluate((s) => JSON.stringify(sessionStorage).includes(s), secret)).toBe(false);

    const row = page.getByRole("row", { name: /console-made/ });
    await row.getByRole("button", { name: /^Disable/ }).click();
    await row.getByText("disabled").waitFor();
    const refused = await fetch(`${t.gatewayUrl}/v1/models`, { headers: { authorization: `Bearer ${secret}` } });
    expect(refused.status).toBe(401);
    await screenshot(page, "keys");
  }, 60_000);

  it("shows providers, routing rules, limits and guardrails, with their edit controls", async () => {
    await open(page, "/gateway/providers", "Providers");
    expect(await page.getByRole("rowheader").allTextContents()).toEqual(expect.arrayContaining(["anthropic", "openai", "azure"]));
    await page.getByRole("button", { name: "Edit anthropic" }).click();
    await page.getByLabel("In flight, at most").fill("64");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("row", { name: /anthropic/ }).getByText("64").waitFor();
    await screenshot(page, "providers");

    await open(page, "/gateway/routing-rules", "Routing rules");
    expect(await page.getByRole("row").count()).toBe(4);
    await page.getByRole("button", { name: "Add rule" }).click();
    await page.getByLabel("Priority").fill("5");
    await page.getByLabel("Models").fill("claude-fast-*");
    await page.getByLabel("Provider 1").selectOption("anthropic");
    await page.getByRole("button", { name: "Add target" }).click();
    await page.getByLabel("Provider 2").selectOption("openai");
    await page.getByLabel("Upstream model 2").fill("gpt-x");
    await page.getByRole("button", { name: "Add rule" }).click();
    await page.getByRole("rowheader", { name: "5" }).waitFor();
    await screenshot(page, "routing-rules");

    await open(page, "/gateway/limits", "Usage limits");
    await page.getByRole("row", { name: /tests/ }).waitFor();
    await screenshot(page, "limits");

    await open(page, "/gateway/guardrails", "Guardrails");
    await page.getByRole("button", { name: "Edit pii on input" }).click();
    await page.getByLabel("Enabled").uncheck();
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("row", { name: /PII/ }).getByText("disabled").waitFor();
    await screenshot(page, "guardrails");
  }, 60_000);

  it("names every control on every page (labels, button text)", async () => {
    for (const [path, heading] of [
      ["/projects", "Projects"],
      [`/projects/${seed.projectId}/inference-pipelines/${seed.pipelineId}`, "production"],
      ["/gateway/request-log", "Request log"],
      ["/gateway/keys", "Gateway keys"],
      ["/gateway/routing-rules", "Routing rules"],
      ["/gateway/limits", "Usage limits"],
    ] as const) {
      await open(page, path, heading);
      expect(await unnamedControls(page), path).toEqual([]);
    }
  }, 60_000);

  it("signs out: the key leaves sessionStorage", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem("warden.apiKey"))).toBeNull();
  });
});

describe("the console at phone size", () => {
  it("fits a 390 px screen without sideways scrolling", async () => {
    const context = await newContext({ width: 390, height: 844 });
    const page = await context.newPage();
    await signIn(page, t.adminKey);
    for (const [path, heading, name] of [
      ["/projects", "Projects", "phone-projects"],
      [`/projects/${seed.projectId}/inference-pipelines/${seed.pipelineId}?result=`, "production", "phone-pipeline"],
      ["/gateway/request-log", "Request log", "phone-request-log"],
      ["/gateway/usage", "Gateway usage", "phone-usage"],
    ] as const) {
      await open(page, path, heading);
      await screenshot(page, name);
      expect(await sidewaysOverflow(page), path).toEqual([]);
    }
    await context.close();
  }, 60_000);
});

describe("a VIEWER key", () => {
  it("sees no edit control on any page, and the API refuses its edits anyway", async () => {
    const context = await newContext();
    const page = await context.newPage();
    await signIn(page, seed.viewerKey);
    await page.getByText("VIEWER").waitFor();
    const editNames = /^(Create|Add|Edit|Delete|Disable|Enable|Save|Remove)\b/;
    for (const [path, heading] of [
      ["/gateway/keys", "Gateway keys"],
      ["/gateway/providers", "Providers"],
      ["/gateway/routing-rules", "Routing rules"],
      ["/gateway/limits", "Usage limits"],
      ["/gateway/guardrails", "Guardrails"],
    ] as const) {
      await open(page, path, heading);
      await page.getByRole("rowheader").first().waitFor();
      const buttons = await page.getByRole("button").allTextContents();
      expect(buttons.filter((name) => editNames.test(name.trim())), path).toEqual([]);
      expect(await page.locator("main form").count(), path).toBe(0);
    }
    await screenshot(page, "viewer-keys");

    // The same key, calling the same API the console calls, from the console's own page.
    const refused = await page.evaluate(async (key) => {
      const send = async (method: string, path: string, body: unknown) =>
        (await fetch(path, { method, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) })).status;
      return {
        createKey: await send("POST", "/v1/gateway/keys", { name: "sneaky" }),
        createProvider: await send("POST", "/v1/gateway/providers", { name: "x", kind: "openai", baseUrl: "http://127.0.0.1:1" }),
        createRule: await send("POST", "/v1/gateway/routing-rules", { priority: 1, providerName: "openai" }),
        createLimit: await send("POST", "/v1/gateway/usage-limits", { scope: "key", subjectId: "00000000-0000-4000-8000-000000000000", period: "daily", tokenLimit: 1 }),
        createGuardrail: await send("POST", "/v1/gateway/guardrails", { kind: "pii", stage: "output" }),
        createProject: await send("POST", "/v1/projects", { name: "sneaky", taskType: "llm-base" }),
      };
    }, seed.viewerKey);
    expect(refused).toEqual({ createKey: 403, createProvider: 403, createRule: 403, createLimit: 403, createGuardrail: 403, createProject: 403 });
    await context.close();
  }, 60_000);
});

describe("the network", () => {
  it("every request of every page went to Warden's own origin, and no page reported an error", () => {
    expect(requested.length).toBeGreaterThan(50);
    expect(requested.filter((url) => new URL(url).origin !== origin)).toEqual([]);
    expect(pageProblems).toEqual([]);
  });
});

/**
 * A real headless Chromium for the console's tests: Debian's `chromium` package, driven by
 * playwright-core (which downloads no browser of its own). CHROMIUM_PATH overrides where it is.
 */
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** Where screenshots go: a test artefact, ignored by git. */
export const ARTIFACTS = path.resolve("test-artifacts/console");

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`No Chromium at ${CHROMIUM_PATH}. Install Debian's package (apt-get install -y chromium), or set CHROMIUM_PATH; .ci/run installs it.`);
  }
  await mkdir(ARTIFACTS, { recursive: true });
  // --no-sandbox: CI and these machines run tests as root, where Chromium's sandbox cannot start.
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/*
 * The two checks below run in the page. They are JavaScript source, not functions, because the
 * project's type check has no DOM types (they would clash with Node's): what runs in the browser
 * stays plain and small here.
 */

/**
 * Controls without a name a screen reader could say: inputs and selects with no label, buttons
 * and links with no text. Each is described by the start of its HTML.
 */
const UNNAMED_CONTROLS = `(() => {
  const missing = [];
  for (const element of document.querySelectorAll("input, select, textarea")) {
    if (element.type === "hidden") continue;
    if (element.labels.length === 0 && !element.getAttribute("aria-label") && !element.getAttribute("aria-labelledby")) missing.push(element.outerHTML.slice(0, 120));
  }
  for (const element of document.querySelectorAll("button, a[href]")) {
    if (element.textContent.trim() === "" && !element.getAttribute("aria-label")) missing.push(element.outerHTML.slice(0, 120));
  }
  return missing;
})()`;

/**
 * What sticks out past the window's right edge, so that the page would scroll sideways: the
 * outermost such elements, by tag and class. What a scrolling box clips (a wide table in its
 * wrapper) does not count, unless it is positioned against something outside the box.
 */
const SIDEWAYS_OVERFLOW = `(() => {
  const describe = (element) => element.tagName.toLowerCase() + (typeof element.className === "string" && element.className ? "." + element.className.split(" ").join(".") : "");
  const clipped = (element) => {
    const positioned = getComputedStyle(element).position === "absolute";
    for (let parent = element.parentElement; parent; parent = parent.parentElement) {
      const style = getComputedStyle(parent);
      if (["auto", "scroll", "hidden"].includes(style.overflowX) && (!positioned || style.position !== "static")) return true;
    }
    return false;
  };
  const out = [];
  for (const element of document.body.querySelectorAll("*")) {
    if (element.getBoundingClientRect().right <= window.innerWidth + 1 || clipped(element)) continue;
    if (element.parentElement && out.includes(describe(element.parentElement))) continue;
    out.push(describe(element));
  }
  return out.slice(0, 8);
})()`;

export function unnamedControls(page: Page): Promise<string[]> {
  return page.evaluate<string[]>(UNNAMED_CONTROLS);
}

export function sidewaysOverflow(page: Page): Promise<string[]> {
  return page.evaluate<string[]>(SIDEWAYS_OVERFLOW);
}

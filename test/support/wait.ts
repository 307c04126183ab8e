/**
 * How long a test waits for the state it sets up (calls held, a buffer full) before it measures
 * anything: generous, as it bounds no behaviour under test, and a loaded machine is slow to get there.
 */
export const setUpWaitMs = 30_000;

export async function sleep(ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Polls `condition` every `everyMs` until it holds; gives up after `deadlineMs`, naming `what`, so
 * that a condition that never comes fails its test instead of hanging it.
 */
export async function until(condition: () => Promise<boolean>, what: string, deadlineMs: number, everyMs = 25): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (Date.now() < end) {
    if (await condition()) return;
    await sleep(everyMs);
  }
  throw new Error(`gave up after ${deadlineMs} ms waiting for ${what}`);
}

import { describe, expect, it } from "vitest";
import { Stop } from "../src/platform/stop.ts";

/** Stop stands in for an AbortController and its signal: it must behave as they do where dispatch.ts and the pipeline use them. */
describe("Stop", () => {
  it("calls each listener still on it once, when stopped, with an AbortController's reason", () => {
    const stop = new Stop();
    const calls: string[] = [];
    const kept = () => calls.push("kept");
    const removed = () => calls.push("removed");
    stop.addEventListener("abort", kept, { once: true });
    stop.addEventListener("abort", removed, { once: true });
    stop.addEventListener("abort", () => calls.push("also kept"), { once: true });
    stop.removeEventListener("abort", removed);
    stop.removeEventListener("abort", () => calls.push("never added"));
    expect(stop.aborted).toBe(false);
    expect(() => stop.throwIfAborted()).not.toThrow();
    stop.abort();
    stop.abort();
    expect(calls).toEqual(["kept", "also kept"]);
    expect(stop.aborted).toBe(true);
    expect(stop.reason).toBeInstanceOf(DOMException);
    expect(stop.reason).toMatchObject({ name: "AbortError" });
    expect(() => stop.throwIfAborted()).toThrow(stop.reason as Error);
  });

  it("does not call a listener added after it was stopped, as an aborted signal does not", () => {
    const controller = new AbortController();
    controller.abort();
    const stop = new Stop();
    stop.abort();
    const calls: string[] = [];
    controller.signal.addEventListener("abort", () => calls.push("signal"), { once: true });
    stop.addEventListener("abort", () => calls.push("stop"), { once: true });
    expect(calls).toEqual([]);
  });
});

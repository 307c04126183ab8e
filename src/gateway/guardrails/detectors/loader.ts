import { loadContentSafety, readBundledContentLexicon, type ContentDetector } from "./content-safety.ts";
import { loadInjection, readBundledInjectionWeights, type InjectionDetector } from "./injection.ts";
import { loadPii, type PiiDetector } from "./pii.ts";

/**
 * Loading the three in-process detectors, with a state the gateway can observe: while it is
 * `loading` a guardrail answers 503 "The … guardrail is still loading" (Retry-After 5 s); once
 * `ready` the detectors are used; `failed` carries the error.
 *
 * Design: the data files are not read by the detectors themselves but through `DetectorSources`,
 * async functions handed to the loader. Production passes the defaults, which read the files
 * bundled next to this module. A test passes a source whose promise it resolves when it chooses,
 * so it can observe `loading`, then release the source and observe `ready`, without sleeps,
 * timers or test-only flags in this code. A source that rejects (or returns a file that does not
 * parse) leaves the loader `failed`, and `ready` rejects with that error.
 */

export type DetectorState = "loading" | "ready" | "failed";
export type DetectorName = "pii" | "injection" | "content";

export interface Detectors {
  pii: PiiDetector;
  injection: InjectionDetector;
  content: ContentDetector;
}

/** Where the detectors' data comes from: each returns the file's text. */
export interface DetectorSources {
  injectionWeights: () => Promise<string>;
  contentLexicon: () => Promise<string>;
}

/** What the sources returned. */
export interface DetectorData {
  injectionWeights: string;
  contentLexicon: string;
}

export const bundledSources: DetectorSources = {
  injectionWeights: readBundledInjectionWeights,
  contentLexicon: readBundledContentLexicon,
};

export type StateListener = (state: DetectorState, name: DetectorName | "all") => void;

interface Slot<T> {
  state: DetectorState;
  value?: T;
  error?: Error;
}

export class DetectorLoader {
  readonly #slots: { pii: Slot<PiiDetector>; injection: Slot<InjectionDetector>; content: Slot<ContentDetector> } = {
    pii: { state: "loading" },
    injection: { state: "loading" },
    content: { state: "loading" },
  };
  readonly #listeners = new Set<StateListener>();
  /** Resolves with all three detectors, or rejects with the first failure. */
  readonly ready: Promise<Detectors>;
  /** The data files' text, read once: detector workers build their own detectors from it. */
  readonly data: Promise<DetectorData>;

  /** Starts loading at once; `sources` defaults to the bundled files. */
  constructor(sources: DetectorSources = bundledSources) {
    // Async, so that a source that throws rejects like one whose promise fails.
    const injectionWeights = (async () => sources.injectionWeights())();
    const contentLexicon = (async () => sources.contentLexicon())();
    const pii = this.#track("pii", loadPii());
    const injection = this.#track("injection", loadInjection(() => injectionWeights));
    const content = this.#track("content", loadContentSafety(() => contentLexicon));
    this.data = Promise.all([injectionWeights, contentLexicon]).then(([w, l]) => ({ injectionWeights: w, contentLexicon: l }));
    this.data.catch(() => undefined);
    this.ready = Promise.all([pii, injection, content]).then(([p, i, c]) => {
      const detectors = { pii: p, injection: i, content: c };
      this.#emit(this.state, "all");
      return detectors;
    });
    // Callers may only look at `state`; an unobserved failure must not crash the process.
    this.ready.catch(() => undefined);
  }

  /** `ready` when all three are, `failed` when any failed, `loading` otherwise. */
  get state(): DetectorState {
    const states = [this.#slots.pii.state, this.#slots.injection.state, this.#slots.content.state];
    if (states.includes("failed")) return "failed";
    return states.every((s) => s === "ready") ? "ready" : "loading";
  }

  /** The state of one detector, so that a PII guardrail can serve while injection still loads. */
  stateOf(name: DetectorName): DetectorState {
    return this.#slots[name].state;
  }

  /** The first load error, if any. */
  get error(): Error | undefined {
    return this.#slots.pii.error ?? this.#slots.injection.error ?? this.#slots.content.error;
  }

  /** The detector when it is ready, otherwise undefined (the caller answers 503). */
  get pii(): PiiDetector | undefined {
    return this.#slots.pii.value;
  }
  get injection(): InjectionDetector | undefined {
    return this.#slots.injection.value;
  }
  get content(): ContentDetector | undefined {
    return this.#slots.content.value;
  }

  /** Called on each state change of one detector, and once with "all" when every load settled. */
  onStateChange(listener: StateListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #emit(state: DetectorState, name: DetectorName | "all"): void {
    for (const listener of this.#listeners) listener(state, name);
  }

  #track<K extends DetectorName>(name: K, loading: Promise<Detectors[K]>): Promise<Detectors[K]> {
    const slot = this.#slots[name] as unknown as Slot<Detectors[K]>;
    return loading.then(
      (value) => {
        slot.value = value;
        slot.state = "ready";
        this.#emit("ready", name);
        return value;
      },
      (reason: unknown) => {
        slot.error = reason instanceof Error ? reason : new Error(String(reason));
        slot.state = "failed";
        this.#emit("failed", name);
        throw slot.error;
      },
    );
  }
}

/** The PII and injection detectors alone, for a process that evaluates tests but serves no gateway. */
export async function loadTextDetectors(sources: DetectorSources = bundledSources): Promise<Pick<Detectors, "pii" | "injection">> {
  const [pii, injection] = await Promise.all([loadPii(), loadInjection(() => sources.injectionWeights())]);
  return { pii, injection };
}

import { Worker, type TransferListItem } from "node:worker_threads";
import type { Logger } from "../../platform/logger.ts";
import type { DetectorData } from "./detectors/loader.ts";
import type { JobResults, WorkerAnswer, WorkerJob } from "./worker.ts";

/** The queue of jobs waiting for a worker is full: the gateway answers 503 "at capacity". */
export class WorkerQueueFull extends Error {}

/** A job that did not finish by its deadline. */
export class WorkerTimeout extends Error {}

export interface WorkerPoolOptions {
  /** Worker threads; each holds its own detectors. */
  size: number;
  /** Jobs that may wait for a worker; one more is refused. */
  queueLimit: number;
  /** From submission, queue time included: a running job past it has its worker replaced. */
  deadlineMs: number;
  /** The detectors' data, as the gateway loaded it. */
  data: Promise<DetectorData>;
  logger: Logger;
}

interface Task {
  id: number;
  job: WorkerJob;
  transfer: TransferListItem[];
  resolve(value: unknown): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
  slot?: Slot;
}

interface Slot {
  worker: Worker;
  task?: Task;
}

/**
 * Work on caller input that can take long, off the event loop: detector checks of long texts and
 * the parsing of large bodies. Linear as each is, a large prompt takes a detector about a second
 * per MiB of the worst text, and JSON.parse seconds for 32 MiB of deep nesting; on the event loop
 * either would stall every other request of the process, management API included. Here it ties
 * up one worker.
 *
 * Workers start with the first job and are replaced when one crashes or overruns a deadline (a
 * thread running JavaScript cannot be interrupted otherwise).
 */
export class WorkerPool {
  readonly #options: WorkerPoolOptions;
  readonly #slots: Slot[] = [];
  readonly #queue: Task[] = [];
  #data: DetectorData | undefined;
  #nextId = 1;
  #stopped = false;

  constructor(options: WorkerPoolOptions) {
    this.#options = options;
  }

  /**
   * The job's result; rejects with WorkerQueueFull, WorkerTimeout or the job's own error. A body
   * in the job is copied (or, in `transfer`, moved) when a worker takes it, not while it waits.
   */
  async run<K extends WorkerJob["kind"]>(job: WorkerJob & { kind: K }, transfer: TransferListItem[] = []): Promise<JobResults[K]> {
    // Loaded by the time a job comes: a check waits for its detector to be ready on the event
    // loop, and the detectors are made from this data.
    this.#data ??= await this.#options.data;
    if (this.#stopped) throw new Error("the worker pool is stopped");
    const idle = this.#options.size - this.#slots.filter((slot) => slot.task).length;
    if (this.#queue.length >= idle + this.#options.queueLimit) throw new WorkerQueueFull("every worker is busy and the queue is full");
    return new Promise<JobResults[K]>((resolve, reject) => {
      const task: Task = {
        id: this.#nextId++,
        job,
        transfer,
        resolve: resolve as (value: unknown) => void,
        reject,
        timer: setTimeout(() => this.#expire(task), this.#options.deadlineMs),
      };
      this.#queue.push(task);
      this.#dispatch();
    });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const task of this.#queue.splice(0)) this.#settle(task, new Error("the worker pool stopped"));
    const slots = this.#slots.splice(0);
    for (const slot of slots) if (slot.task) this.#settle(slot.task, new Error("the worker pool stopped"));
    await Promise.all(slots.map((slot) => slot.worker.terminate()));
  }

  #dispatch(): void {
    while (this.#queue.length > 0) {
      let slot = this.#slots.find((s) => !s.task);
      if (!slot && this.#slots.length < this.#options.size) slot = this.#spawn();
      if (!slot) return;
      const task = this.#queue.shift()!;
      task.slot = slot;
      slot.task = task;
      slot.worker.postMessage({ id: task.id, job: task.job }, task.transfer);
    }
  }

  #spawn(): Slot {
    const worker = new Worker(new URL("./worker.ts", import.meta.url), { workerData: this.#data });
    const slot: Slot = { worker };
    this.#slots.push(slot);
    worker.on("message", (answer: WorkerAnswer) => {
      const task = slot.task;
      if (!task || task.id !== answer.id) return;
      slot.task = undefined;
      this.#settle(task, "error" in answer ? new Error(answer.error) : { value: answer.value });
      this.#dispatch();
    });
    worker.on("error", (err) => {
      this.#options.logger.error({ err }, "a gateway worker failed");
      this.#replace(slot, err);
    });
    worker.on("exit", () => {
      if (!this.#stopped) this.#replace(slot, new Error("a gateway worker exited"));
    });
    return slot;
  }

  #replace(slot: Slot, err: Error): void {
    const index = this.#slots.indexOf(slot);
    if (index < 0) return;
    this.#slots.splice(index, 1);
    if (slot.task) this.#settle(slot.task, err);
    slot.task = undefined;
    void slot.worker.terminate();
    this.#dispatch();
  }

  #expire(task: Task): void {
    const index = this.#queue.indexOf(task);
    if (index >= 0) this.#queue.splice(index, 1);
    const timeout = new WorkerTimeout(`the job did not finish within ${this.#options.deadlineMs} ms`);
    if (task.slot && task.slot.task === task) {
      this.#options.logger.warn({ deadlineMs: this.#options.deadlineMs, job: task.job.kind }, "a worker job overran its deadline: replacing its worker");
      this.#replace(task.slot, timeout);
    } else {
      this.#settle(task, timeout);
    }
  }

  #settle(task: Task, outcome: { value: unknown } | Error): void {
    clearTimeout(task.timer);
    if (outcome instanceof Error) task.reject(outcome);
    else task.resolve(outcome.value);
  }
}

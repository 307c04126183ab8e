/** One way in to the same operation: a door of Warden and the client that knocks on it. */
export interface Door {
  name: string;
  /** One request, awaited to its last byte and checked; throws on an unexpected answer. */
  call: () => Promise<void>;
}

export interface LatencyStats {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  mean: number;
}

export interface Throughput {
  requests: number;
  seconds: number;
  perSecond: number;
}

/** The order of the doors in round `round`: rotated, so that none always goes first. */
function rotation<T>(items: T[], round: number): T[] {
  const shift = round % items.length;
  return [...items.slice(shift), ...items.slice(0, shift)];
}

/** Splits `total` into `rounds` near-equal parts. */
function shares(total: number, rounds: number): number[] {
  return Array.from({ length: rounds }, (_, i) => Math.floor((total * (i + 1)) / rounds) - Math.floor((total * i) / rounds));
}

/**
 * Concurrency 1: `perDoor` requests per door, one after another, in `rounds` interleaved rounds
 * (door A, door B, ..., then again in rotated order) so that drift (JIT, GC, a growing table)
 * spreads over all doors alike. Returns each request's latency in milliseconds.
 */
export async function sequentialLatencies(doors: Door[], perDoor: number, rounds: number): Promise<Map<string, number[]>> {
  const samples = new Map<string, number[]>(doors.map((door) => [door.name, []]));
  const parts = shares(perDoor, rounds);
  for (let round = 0; round < rounds; round++) {
    for (const door of rotation(doors, round)) {
      const into = samples.get(door.name) ?? [];
      for (let i = 0; i < parts[round]; i++) {
        const start = performance.now();
        await door.call();
        into.push(performance.now() - start);
      }
    }
  }
  return samples;
}

/**
 * Concurrency `concurrency`: `perDoor` requests per door, kept `concurrency` in flight at once,
 * in interleaved rounds as above. Returns requests per second per door over all its rounds.
 */
export async function concurrentThroughput(
  doors: Door[],
  perDoor: number,
  rounds: number,
  concurrency: number,
): Promise<Map<string, Throughput>> {
  const totals = new Map<string, { requests: number; ms: number }>(doors.map((door) => [door.name, { requests: 0, ms: 0 }]));
  const parts = shares(perDoor, rounds);
  for (let round = 0; round < rounds; round++) {
    for (const door of rotation(doors, round)) {
      const ms = await burst(door, parts[round], concurrency);
      const total = totals.get(door.name);
      if (total) {
        total.requests += parts[round];
        total.ms += ms;
      }
    }
  }
  return new Map(
    [...totals].map(([name, { requests, ms }]) => [name, { requests, seconds: ms / 1000, perSecond: (requests * 1000) / ms }]),
  );
}

/** `count` calls with `concurrency` workers pulling from one counter; the elapsed milliseconds. */
export async function burst(door: Door, count: number, concurrency: number): Promise<number> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      next++;
      await door.call();
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return performance.now() - start;
}

/** Nearest-rank percentiles and the mean of a set of latencies. */
export function latencyStats(samples: number[]): LatencyStats {
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = (p: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
  const mean = sorted.reduce((sum, x) => sum + x, 0) / sorted.length;
  return { count: sorted.length, p50: rank(50), p90: rank(90), p99: rank(99), mean };
}

/** The Redis that the usage-limit benches count in: connected if one answers, and cleaned up after. */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";

/** Where the Redis-counter gateways count: BENCH_REDIS_URL, or the local Redis. */
export const benchRedisUrl = process.env.BENCH_REDIS_URL || "redis://127.0.0.1:6379";

export interface BenchRedis {
  /** "Redis 7.0.15". */
  version: string;
  /** The run's own key prefix. */
  prefix: string;
  /** What a gateway process needs to count there. */
  env: { REDIS_URL: string; WARDEN_REDIS_KEY_PREFIX: string };
}

/**
 * The bench's Redis under a key prefix of the run's own, whose keys are deleted (SCAN, not KEYS:
 * the Redis may be shared) by a cleanup registered with `defer`; undefined when none answers. Call
 * it before the Redis gateway starts: cleanups run in reverse, so the keys go once it has stopped.
 */
export async function benchRedis(defer: (cleanup: () => Promise<unknown>) => void, log: (message: string) => void, section: string): Promise<BenchRedis | undefined> {
  const client = new Redis(benchRedisUrl, { lazyConnect: true, connectTimeout: 2000, maxRetriesPerRequest: 1, retryStrategy: () => null });
  let info: string;
  try {
    await client.connect();
    info = await client.info("server");
  } catch {
    client.disconnect();
    return undefined;
  }
  const prefix = `warden-bench:${randomBytes(6).toString("hex")}:`;
  defer(async () => {
    try {
      let cursor = "0";
      let deleted = 0;
      do {
        const [next, keys] = await client.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
        cursor = next;
        if (keys.length > 0) deleted += await client.del(...keys);
      } while (cursor !== "0");
      log(`${section}: deleted ${deleted} Redis key(s) under ${prefix}`);
    } finally {
      client.disconnect();
    }
  });
  return {
    version: `Redis ${/redis_version:(\S+)/.exec(info)?.[1] ?? "unknown"}`,
    prefix,
    env: { REDIS_URL: benchRedisUrl, WARDEN_REDIS_KEY_PREFIX: prefix },
  };
}

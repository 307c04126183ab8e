/** The Redis that the usage-limit benches count in: connected if one answers, and cleaned up after. */
import { Redis } from "ioredis";

/** A client of the Redis at `url` and its version, or undefined when none answers. */
export async function connectRedis(url: string): Promise<{ client: Redis; version: string } | undefined> {
  const client = new Redis(url, { lazyConnect: true, connectTimeout: 2000, maxRetriesPerRequest: 1, retryStrategy: () => null });
  try {
    await client.connect();
    const info = await client.info("server");
    return { client, version: `Redis ${/redis_version:(\S+)/.exec(info)?.[1] ?? "unknown"}` };
  } catch {
    client.disconnect();
    return undefined;
  }
}

/** Deletes every key under `prefix` (SCAN, not KEYS: the Redis may be shared); how many. */
export async function deleteKeys(client: Redis, prefix: string): Promise<number> {
  let cursor = "0";
  let deleted = 0;
  do {
    const [next, keys] = await client.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
    cursor = next;
    if (keys.length > 0) deleted += await client.del(...keys);
  } while (cursor !== "0");
  return deleted;
}

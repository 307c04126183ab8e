import { Redis } from "ioredis";

/** Deletes every key under `prefix`: what one test's Warden wrote into the shared Redis. */
export async function dropRedisKeys(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url);
  try {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    await redis.quit();
  }
}

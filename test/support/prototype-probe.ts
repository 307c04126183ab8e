/**
 * Run with `--allow-natives-syntax` (test/prototypes.test.ts): starts Warden, both halves, usage
 * counters in Redis (argv: a database's URL, the Redis URL and a key prefix), after defining a subclass of Number
 * of its own, and prints which built-in prototypes V8 holds with dictionary properties, before the
 * start and after it.
 */
import { startTestApp } from "./app.ts";

const isFast = new Function("o", "return %HasFastProperties(o)") as (o: object) => boolean;
const prototypes: Record<string, object> = {
  Object: Object.prototype,
  Array: Array.prototype,
  String: String.prototype,
  Number: Number.prototype,
  RegExp: RegExp.prototype,
  Map: Map.prototype,
  Promise: Promise.prototype,
};
const slow = () => Object.entries(prototypes).flatMap(([name, prototype]) => (isFast(prototype) ? [] : [name]));

// As ioredis defines `class VerbatimString extends String`, and never makes one.
class Probe extends Number {}
void Probe;
const before = slow();
const [databaseUrl, redisUrl, redisPrefix] = process.argv.slice(2) as [string, string, string];
// The test drops the database.
const database = { url: databaseUrl, drop: async () => {} };
const t = await startTestApp({ database, env: { REDIS_URL: redisUrl, WARDEN_REDIS_KEY_PREFIX: redisPrefix } });
const after = slow();
await t.stop();
process.stdout.write(`${JSON.stringify({ before, after })}\n`);

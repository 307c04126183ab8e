import { randomBytes } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/** A fresh, empty database for one test file, on the server the global setup chose. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const adminUrl = inject("adminDatabaseUrl");
  const name = `warden_t_${randomBytes(6).toString("hex")}`;
  await withClient(adminUrl, (client) => client.query(`create database ${name}`));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => withClient(adminUrl, (client) => client.query(`drop database if exists ${name} with (force)`)).then(() => undefined),
  };
}

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** How many statements of other sessions on `session`'s database wait on a lock. */
export async function waitingOnLock(session: pg.Client): Promise<number> {
  const { rows } = await session.query<{ n: number }>(
    "select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database() and pid <> pg_backend_pid()",
  );
  return rows[0]!.n;
}

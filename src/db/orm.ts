import { MikroORM } from "@mikro-orm/postgresql";
import pg from "pg";
import { Migrator } from "@mikro-orm/migrations";
import type { EntitySchema } from "@mikro-orm/core";
import { migrations } from "./migrations/index.ts";

export interface OrmOptions {
  databaseUrl: string;
  entities: EntitySchema[];
  poolSize?: number;
}

/** Connects, and brings the schema up to date before anything else touches it. */
export async function createOrm(options: OrmOptions): Promise<MikroORM> {
  const orm = await MikroORM.init({
    clientUrl: options.databaseUrl,
    entities: options.entities,
    extensions: [Migrator],
    migrations: { migrationsList: migrations, transactional: true, allOrNothing: true, silent: true, snapshot: false },
    pool: { min: 0, max: options.poolSize ?? 10 },
    discovery: { warnWhenNoEntities: false },
    debug: false,
  });
  await migrateExclusively(options.databaseUrl, () => orm.migrator.up());
  return orm;
}

/** Processes that start together against one database take turns to migrate it. */
const migrationLockId = 7_230_002;

async function migrateExclusively(databaseUrl: string, migrate: () => Promise<unknown>): Promise<void> {
  const lock = new pg.Client({ connectionString: databaseUrl });
  await lock.connect();
  try {
    await lock.query(`select pg_advisory_lock(${migrationLockId})`);
    await migrate();
  } finally {
    await lock.end();
  }
}

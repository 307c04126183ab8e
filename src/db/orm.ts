import { MikroORM } from "@mikro-orm/postgresql";
import { Migrator } from "@mikro-orm/migrations";
import type { EntitySchema } from "@mikro-orm/core";
import { migrations } from "./migrations/index.ts";
import { defaultDatabaseDeadlines, defaultMigrationTimeoutMs, migrationDeadlines, type DatabaseDeadlines } from "./deadlines.ts";
import { createClient, deadlineOptions } from "./pools.ts";

export interface OrmOptions {
  databaseUrl: string;
  entities: EntitySchema[];
  poolSize?: number;
  /** The defaults of src/db/deadlines.ts unless given. */
  deadlines?: DatabaseDeadlines;
  migrationTimeoutMs?: number;
}

/**
 * Connects, and brings the schema up to date before anything else touches it. Migrations run on
 * connections with the migration bound; the pool is then re-made with the everyday deadlines.
 */
export async function createOrm(options: OrmOptions): Promise<MikroORM> {
  const deadlines = options.deadlines ?? defaultDatabaseDeadlines;
  const forMigrations = migrationDeadlines(deadlines, options.migrationTimeoutMs ?? defaultMigrationTimeoutMs);
  const orm = await MikroORM.init({
    clientUrl: options.databaseUrl,
    entities: options.entities,
    extensions: [Migrator],
    migrations: { migrationsList: migrations, transactional: true, allOrNothing: true, silent: true, snapshot: false },
    pool: { min: 0, max: options.poolSize ?? 10 },
    driverOptions: deadlineOptions(forMigrations),
    discovery: { warnWhenNoEntities: false },
    debug: false,
  });
  await migrateExclusively(options.databaseUrl, forMigrations, () => orm.migrator.up());
  await orm.reconnect({ driverOptions: deadlineOptions(deadlines) });
  return orm;
}

/** Processes that start together against one database take turns to migrate it. */
const migrationLockId = 7_230_002;

async function migrateExclusively(databaseUrl: string, deadlines: DatabaseDeadlines, migrate: () => Promise<unknown>): Promise<void> {
  const lock = createClient(databaseUrl, deadlines);
  await lock.connect();
  try {
    await lock.query(`select pg_advisory_lock(${migrationLockId})`);
    await migrate();
  } finally {
    await lock.end();
  }
}

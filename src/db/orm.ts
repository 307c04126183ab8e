import { MikroORM } from "@mikro-orm/postgresql";
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
  await orm.migrator.up();
  return orm;
}

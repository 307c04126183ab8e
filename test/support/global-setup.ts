import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { startEmbeddedPostgres, type EmbeddedDatabase } from "../../src/db/embedded.ts";
import { createLogger } from "../../src/platform/logger.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** A PostgreSQL URL where tests may create and drop databases of their own. */
    adminDatabaseUrl: string;
  }
}

let embedded: EmbeddedDatabase | undefined;
let dataDir: string | undefined;

/** Tests use DATABASE_URL when it is set, and an embedded PostgreSQL of their own otherwise. */
export async function setup(project: TestProject): Promise<void> {
  let url = process.env.DATABASE_URL;
  if (!url) {
    dataDir = await mkdtemp(path.join(os.tmpdir(), "warden-test-pg-"));
    embedded = await startEmbeddedPostgres(dataDir, createLogger("silent"));
    url = embedded.url;
  }
  project.provide("adminDatabaseUrl", url);
}

export async function teardown(): Promise<void> {
  await embedded?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
}

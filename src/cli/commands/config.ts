import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { checkPlan, executePlan } from "../apply.ts";
import type { Api } from "../client.ts";
import { ConfigFileError, parseConfigFile, pathText, type DesiredState } from "../config-file.ts";
import { exportConfig } from "../export.ts";
import type { Io } from "../io.ts";
import { loadNames } from "../names.ts";
import { computePlan, formatPlan } from "../plan.ts";
import type { Names, SectionContext } from "../section.ts";
import { sections } from "../sections.ts";

export interface ApplyOptions {
  file: string;
  dryRun: boolean;
  prune: boolean;
}

/** `warden apply FILE`: prints the plan, then (unless a dry run) makes it. */
export async function applyCommand(api: Api, io: Io, env: Readonly<Record<string, string | undefined>>, options: ApplyOptions): Promise<void> {
  const text = await readFile(path.resolve(io.cwd, options.file), "utf8").catch((error: NodeJS.ErrnoException) => {
    throw new ConfigFileError([`cannot read the file: ${error.code ?? error.message}`]);
  });
  const desired = parseConfigFile(text, env);
  const ctx = await context(api, desired.secrets);
  checkKeyReferences(desired, ctx.names);
  const changes = await computePlan(ctx, desired, options.prune);
  checkPlan(changes);
  io.stdout.write(formatPlan(changes));
  if (options.dryRun || changes.length === 0) return;
  await executePlan(ctx, changes);
  io.stdout.write(`Applied ${changes.length} change${changes.length === 1 ? "" : "s"}.\n`);
}

/** `warden export`: the workspace as a file, to stdout or --output. */
export async function exportCommand(api: Api, io: Io, output: string | undefined): Promise<void> {
  const text = await exportConfig(await context(api, new Map()));
  if (output === undefined) io.stdout.write(text);
  else await writeFile(path.resolve(io.cwd, output), text, { mode: 0o644 });
}

async function context(api: Api, secrets: ReadonlyMap<string, string>): Promise<SectionContext & { refreshNames(): Promise<void> }> {
  const ctx = {
    api,
    secrets,
    names: await loadNames(api),
    async refreshNames() {
      ctx.names = await loadNames(api);
    },
  };
  return ctx;
}

/** Keys are not in the file, so a rule or limit on a key must name one the workspace has. */
function checkKeyReferences(desired: DesiredState, names: Names): void {
  const problems: string[] = [];
  for (const section of sections) {
    desired.items.get(section.name)!.forEach((item, i) => {
      for (const ref of section.references?.(item) ?? []) {
        if (ref.section === "keys" && names.id("key", ref.name) === undefined) {
          problems.push(`${pathText([section.name, i, ...ref.path])}: no gateway key named "${ref.name}" in the workspace`);
        }
      }
    });
  }
  if (problems.length > 0) throw new ConfigFileError(problems);
}

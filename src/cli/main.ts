import { parseArgs, type ParseArgsConfig } from "node:util";
import { ConnectError } from "@connectrpc/connect";
import { RefusedChange } from "./apply.ts";
import { connectApi, describeServerError, type Api } from "./client.ts";
import { applyCommand, exportCommand } from "./commands/config.ts";
import { createKey, disableKey, listKeys } from "./commands/keys.ts";
import { listProviders, showLogs, showUsage } from "./commands/read.ts";
import { ConfigFileError } from "./config-file.ts";
import { help } from "./help.ts";
import { UsageError, type Io } from "./io.ts";
import { loadCliSettings, SettingsError } from "./settings.ts";

type Options = NonNullable<ParseArgsConfig["options"]>;

const flag = { type: "boolean" } as const;
const text = { type: "string" } as const;

/** Each command: its options, and what it does with them and its positional arguments. */
const commands: Record<string, { options: Options; positionals: number; run(api: Api, io: Io, values: Record<string, string | boolean | string[] | undefined>, args: string[], env: Env): Promise<void> }> = {
  apply: {
    options: { "dry-run": flag, "no-prune": flag },
    positionals: 1,
    run: (api, io, v, args, env) => applyCommand(api, io, env, { file: args[0]!, dryRun: v["dry-run"] === true, prune: v["no-prune"] !== true }),
  },
  export: {
    options: { output: text },
    positionals: 0,
    run: (api, io, v) => exportCommand(api, io, v.output as string | undefined),
  },
  "keys create": {
    options: { name: text, user: text, group: { type: "string", multiple: true }, json: flag },
    positionals: 0,
    run: (api, io, v) => {
      if (v.name === undefined) throw new UsageError("--name is required");
      return createKey(api, io, { name: v.name as string, user: v.user as string | undefined, groups: (v.group as string[] | undefined) ?? [], json: v.json === true });
    },
  },
  "keys list": { options: { json: flag }, positionals: 0, run: (api, io, v) => listKeys(api, io, v.json === true) },
  "keys disable": { options: {}, positionals: 1, run: (api, io, _v, args) => disableKey(api, io, args[0]!) },
  "providers list": { options: { json: flag }, positionals: 0, run: (api, io, v) => listProviders(api, io, v.json === true) },
  usage: {
    options: { from: text, to: text, by: text, bucket: text, json: flag },
    positionals: 0,
    run: (api, io, v) => showUsage(api, io, { from: v.from as string | undefined, to: v.to as string | undefined, by: (v.by as string | undefined) ?? "key", bucket: (v.bucket as string | undefined) ?? "none", json: v.json === true }),
  },
  logs: {
    options: {
      since: text, until: text, model: text, status: text, key: text, user: text, provider: text, endpoint: text,
      "error-type": text, superseded: flag, "request-id": text, page: text, "per-page": text, json: flag,
    },
    positionals: 0,
    run: (api, io, v) => showLogs(api, io, {
      since: v.since as string | undefined,
      until: v.until as string | undefined,
      model: v.model as string | undefined,
      status: v.status as string | undefined,
      key: v.key as string | undefined,
      user: v.user as string | undefined,
      provider: v.provider as string | undefined,
      endpoint: v.endpoint as string | undefined,
      errorType: v["error-type"] as string | undefined,
      superseded: v.superseded === true,
      requestId: v["request-id"] as string | undefined,
      page: v.page as string | undefined,
      perPage: v["per-page"] as string | undefined,
      json: v.json === true,
    }),
  },
};

type Env = Readonly<Record<string, string | undefined>>;

/** The command a command line names: one word, or two (`keys list`). */
function commandOf(argv: readonly string[]): { name: string; rest: string[] } | undefined {
  const two = argv.slice(0, 2).join(" ");
  if (two in commands) return { name: two, rest: argv.slice(2) };
  if (argv[0] !== undefined && argv[0] in commands) return { name: argv[0], rest: argv.slice(1) };
  return undefined;
}

/**
 * The `warden` CLI: runs one command line and answers its exit status (0 done, 1 failed, 2 a bad
 * file or command line). Its composition root: the environment is read here and nowhere else.
 */
export async function main(argv: readonly string[], env: Env, io: Io): Promise<number> {
  if (argv.length === 0 || argv[0] === "--help" || argv[0] === "-h" || argv[0] === "help") {
    io.stdout.write(help.warden!);
    return argv.length === 0 ? 2 : 0;
  }
  const command = commandOf(argv);
  if (!command) {
    io.stderr.write(`warden: unknown command "${argv.slice(0, 2).join(" ")}": see warden --help\n`);
    return 2;
  }
  try {
    const spec = commands[command.name]!;
    const { values, positionals } = parseArgs({ args: command.rest, options: { ...spec.options, help: { type: "boolean", short: "h" } }, allowPositionals: true, strict: true });
    if (values.help) {
      io.stdout.write(help[command.name]!);
      return 0;
    }
    if (positionals.length !== spec.positionals) throw new UsageError(`expects ${spec.positionals === 0 ? "no arguments" : `${spec.positionals} argument`}, got ${positionals.length}`);
    const api = connectApi(loadCliSettings(env));
    await spec.run(api, io, values, positionals, env);
    return 0;
  } catch (error) {
    return report(error, command.name, argv, io);
  }
}

function report(error: unknown, command: string, argv: readonly string[], io: Io): number {
  if (error instanceof ConfigFileError) {
    const file = command === "apply" ? argv.find((a, i) => i > 0 && !a.startsWith("--")) : undefined;
    for (const problem of error.problems) io.stderr.write(`${file ?? "file"}: ${problem}\n`);
    return 2;
  }
  if (error instanceof ConnectError) {
    io.stderr.write(`warden ${command}: ${describeServerError(error)}\n`);
    return 1;
  }
  if (error instanceof RefusedChange) {
    io.stderr.write(`warden ${command}: ${error.message}\n`);
    return 1;
  }
  if (error instanceof UsageError || error instanceof SettingsError || (error instanceof TypeError && "code" in error && String(error.code).startsWith("ERR_PARSE_ARGS"))) {
    io.stderr.write(`warden ${command}: ${error.message} (see warden ${command} --help)\n`);
    return 2;
  }
  io.stderr.write(`warden ${command}: ${error instanceof Error ? error.message : String(error)}\n`);
  return 1;
}

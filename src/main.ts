import { startApp, type Roles } from "./app.ts";
import { DataDirInUseError } from "./db/embedded.ts";
import { ConfigError, loadConfig, type Config } from "./platform/config.ts";
import { createLogger } from "./platform/logger.ts";

/** A start refused for a reason the operator must fix: said plainly on stderr, exit status 2. */
function cannotStart(problems: readonly string[]): never {
  const text = problems.length === 1 ? ` ${problems[0]}` : `\n${problems.map((p) => `  ${p}`).join("\n")}`;
  process.stderr.write(`Warden cannot start:${text}\n`);
  process.exit(2);
}

// Every setting is checked before anything starts, the logger included.
let config: Config;
try {
  config = loadConfig(process.env);
} catch (err) {
  if (err instanceof ConfigError) cannotStart(err.problems);
  throw err;
}
const logger = createLogger(config.logLevel);

// `node src/main.ts` serves both halves; `gateway` or `api` serves one, so that each can scale alone.
const rolesByCommand: Record<string, Roles> = {
  "": { api: true, gateway: true },
  gateway: { api: false, gateway: true },
  api: { api: true, gateway: false },
};
const command = process.argv[2] ?? "";
const roles = rolesByCommand[command];
if (!roles) {
  process.stderr.write(`Unknown command "${command}". Use no command (both halves), "api" or "gateway".\n`);
  process.exit(2);
}

const starting = startApp(config, logger, {
  onAdminKeyGenerated(key, file) {
    // Printed once, outside the JSON log, so that a person sees it and log shippers do not keep it.
    process.stderr.write(
      `\nWarden created the default workspace and its admin API key:\n\n  ${key}\n\n` +
        `It is shown only now, and saved to ${file} (mode 0600).\n\n`,
    );
  },
}, roles);

// Registered before start-up finishes, so that a signal during start-up still shuts down cleanly.
let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    // A second signal (Ctrl-C again) does not wait for the drain.
    if (stopping) {
      logger.warn({ signal }, "stopping at once: requests still in flight are cut");
      process.exit(130);
    }
    stopping = true;
    logger.info({ signal, drainMs: config.shutdownDrainMs }, "shutting down: letting requests in flight finish");
    starting
      .then((app) => app.stop(config.shutdownDrainMs))
      .then(
        () => process.exit(0),
        (err: unknown) => {
          logger.error({ err }, "shutdown failed");
          process.exit(1);
        },
      );
  });
}

await starting.catch((err: unknown) => {
  if (err instanceof DataDirInUseError) cannotStart([err.message]);
  logger.fatal({ err }, "Warden failed to start");
  process.exit(1);
});

import { startApp, type Roles } from "./app.ts";
import { loadConfig } from "./platform/config.ts";
import { createLogger } from "./platform/logger.ts";

const config = loadConfig(process.env);
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
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    starting
      .then((app) => app.stop())
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
  logger.fatal({ err }, "Warden failed to start");
  process.exit(1);
});

import { startApp } from "./app.ts";
import { loadConfig } from "./platform/config.ts";
import { createLogger } from "./platform/logger.ts";

const config = loadConfig(process.env);
const logger = createLogger(config.logLevel);

const app = await startApp(config, logger).catch((err: unknown) => {
  logger.fatal({ err }, "Warden failed to start");
  process.exit(1);
});

if (app.generatedAdminKey) {
  // Printed once, outside the JSON log, so that a person sees it and log shippers do not keep it.
  process.stderr.write(
    `\nWarden created the default workspace and its admin API key:\n\n  ${app.generatedAdminKey}\n\n` +
      `It is shown only now, and saved to ${app.adminKeyFile} (mode 0600).\n\n`,
  );
}

let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    app.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  });
}

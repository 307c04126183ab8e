import { pino, type Logger } from "pino";

export type { Logger };

export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: "warden" },
    redact: {
      paths: ["req.headers.authorization", "req.headers['x-api-key']", "*.secureKey", "*.adminKey"],
      censor: "[redacted]",
    },
  });
}

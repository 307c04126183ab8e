import { z } from "zod";

/**
 * The CLI's own settings, from its environment: read here only (main.ts passes the environment
 * in), so that a test can run the CLI in process with an environment of its own.
 */
const cliSettingsSchema = z.object({
  // The management API (Warden's WARDEN_API_PORT, 8080 by default).
  WARDEN_URL: z.url({ protocol: /^https?$/, error: "WARDEN_URL must be an http or https URL" }).default("http://127.0.0.1:8080"),
  WARDEN_API_KEY: z.string({ error: "WARDEN_API_KEY is required: a management API key of the workspace (sk-…)" })
    .min(1, "WARDEN_API_KEY is required: a management API key of the workspace (sk-…)"),
  // The deadline of every call.
  WARDEN_TIMEOUT_MS: z.coerce.number().int().min(1).max(600_000).default(30_000),
});

export interface CliSettings {
  url: string;
  apiKey: string;
  timeoutMs: number;
}

export class SettingsError extends Error {}

export function loadCliSettings(env: Record<string, string | undefined>): CliSettings {
  const parsed = cliSettingsSchema.safeParse({
    WARDEN_URL: env.WARDEN_URL || undefined,
    WARDEN_API_KEY: env.WARDEN_API_KEY,
    WARDEN_TIMEOUT_MS: env.WARDEN_TIMEOUT_MS || undefined,
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = String(issue.path[0]);
    throw new SettingsError(issue.message.startsWith(name) ? issue.message : `${name}: ${issue.message}`);
  }
  return { url: parsed.data.WARDEN_URL.replace(/\/+$/, ""), apiKey: parsed.data.WARDEN_API_KEY, timeoutMs: parsed.data.WARDEN_TIMEOUT_MS };
}

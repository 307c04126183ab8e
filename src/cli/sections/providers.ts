import { createHash } from "node:crypto";
import { z } from "zod";
import { ProviderKind } from "../../../gen/warden/gateway/v1/admin_pb.js";
import { providerBaseUrl } from "../../gateway/admin/validate.ts";
import { snakeCase, withoutDefaults, type FileEnv, type Section } from "../section.ts";

const kinds = { anthropic: ProviderKind.ANTHROPIC, openai: ProviderKind.OPENAI, azure_openai: ProviderKind.AZURE_OPENAI, openai_compatible: ProviderKind.OPENAI_COMPATIBLE } as const;
type Kind = keyof typeof kinds;
const kindNames = Object.keys(kinds) as Kind[];

/** The server's defaults (src/gateway/admin/providers.ts): a file that leaves a field out means these. */
const defaults = { connectTimeoutMs: 10_000, headersTimeoutMs: 300_000, bodyTimeoutMs: 300_000, maxInFlight: 256 };

export interface ProviderItem {
  name: string;
  kind: Kind;
  baseUrl: string;
  /** The stored key's fingerprint (see fingerprint); null: no key. */
  apiKey: string | null;
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  maxInFlight: number;
  apiVersion: string | null;
}

/** The variable that export names for a provider's key: WARDEN_PROVIDER_<NAME>_API_KEY. */
export function exportedKeyVariable(providerName: string): string {
  return `WARDEN_PROVIDER_${providerName.toUpperCase().replace(/[^A-Z0-9]/g, "_")}_API_KEY`;
}

/** As the server computes it: the first 12 hex digits of the key's SHA-256. */
function fingerprint(key: string): string {
  return createHash("sha256").update(key).digest("hex").slice(0, 12);
}

const envName = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `apiKey: {env: NAME}`, and nothing else: a secret is never written in the file. */
const apiKeyRef = z.unknown().transform((value, ctx): string => {
  const ref = value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  const keys = ref ? Object.keys(ref) : [];
  if (typeof value === "string") {
    ctx.addIssue({ code: "custom", message: "a secret is never written in the file: give the environment variable that holds it, as {env: NAME}" });
  } else if (!ref || keys.length !== 1 || keys[0] !== "env" || typeof ref.env !== "string" || !envName.test(ref.env)) {
    ctx.addIssue({ code: "custom", message: "must be {env: NAME}, NAME an environment variable" });
  } else {
    return ref.env as string;
  }
  return z.NEVER;
});

function providerSchema({ env, secrets }: FileEnv): z.ZodType<ProviderItem> {
  const timeout = z.number().int().min(1).max(3_600_000);
  return z.strictObject({
    name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, "may hold letters, digits, dots, dashes and underscores (at most 64), and starts with a letter or digit"),
    kind: z.enum(kindNames, `must be one of: ${kindNames.join(", ")}`),
    baseUrl: z.string(),
    apiKey: apiKeyRef.optional(),
    connectTimeoutMs: timeout.default(defaults.connectTimeoutMs),
    headersTimeoutMs: timeout.default(defaults.headersTimeoutMs),
    bodyTimeoutMs: timeout.default(defaults.bodyTimeoutMs),
    maxInFlight: z.number().int().min(1).max(100_000).default(defaults.maxInFlight),
    apiVersion: z.string().min(1).max(64).optional(),
  }).transform((p, ctx): ProviderItem => {
    let baseUrl = p.baseUrl;
    try {
      // Stored as the server stores it (no trailing slash, no version path), so that the file's
      // `https://api.openai.com/v1` matches the stored `https://api.openai.com`.
      baseUrl = providerBaseUrl(p.baseUrl, ProviderKind[kinds[p.kind]]);
    } catch {
      ctx.addIssue({ code: "custom", path: ["baseUrl"], message: "must be an http or https URL without a query or fragment" });
    }
    let apiKey: string | null = null;
    if (p.apiKey !== undefined) {
      const secret = env[p.apiKey];
      if (!secret) {
        ctx.addIssue({ code: "custom", path: ["apiKey"], message: `the environment variable ${p.apiKey} is not set` });
      } else {
        secrets.set(p.name, secret);
        apiKey = fingerprint(secret);
      }
    }
    return { ...p, baseUrl, apiKey, apiVersion: p.apiVersion ?? null };
  });
}

export const providers: Section<ProviderItem> = {
  name: "providers",
  noun: "provider",
  item: providerSchema,
  keyOf: (p) => p.name,
  fields: ["kind", "baseUrl", "apiKey", "connectTimeoutMs", "headersTimeoutMs", "bodyTimeoutMs", "maxInFlight", "apiVersion"],
  updatable: ["baseUrl", "apiKey", "connectTimeoutMs", "headersTimeoutMs", "bodyTimeoutMs", "maxInFlight", "apiVersion"],
  secret: ["apiKey"],
  // A provider's kind is fixed at creation; routing rules name it, so it is replaced in place.
  replace: { refuse: "a provider's kind cannot change: give the new kind a new provider name" },

  async list(ctx) {
    const { items } = await ctx.api.admin.listProviders({});
    return items.map((p) => ({
      id: p.id,
      item: {
        name: p.name,
        kind: kindNames.find((k) => kinds[k] === p.kind) ?? "openai",
        baseUrl: p.baseUrl,
        // A key stored before the server kept fingerprints has none: it shows as changed, and the next apply sets it again.
        apiKey: p.hasApiKey ? (p.apiKeySha256Prefix ?? "unknown") : null,
        connectTimeoutMs: p.connectTimeoutMs,
        headersTimeoutMs: p.headersTimeoutMs,
        bodyTimeoutMs: p.bodyTimeoutMs,
        maxInFlight: p.maxInFlight,
        apiVersion: p.apiVersion ?? null,
      },
    }));
  },
  async create(ctx, p) {
    await ctx.api.admin.createProvider({
      name: p.name,
      kind: kinds[p.kind],
      baseUrl: p.baseUrl,
      apiKey: ctx.secrets.get(p.name),
      connectTimeoutMs: p.connectTimeoutMs,
      headersTimeoutMs: p.headersTimeoutMs,
      bodyTimeoutMs: p.bodyTimeoutMs,
      maxInFlight: p.maxInFlight,
      apiVersion: p.apiVersion ?? undefined,
    });
  },
  async update(ctx, id, p, changed) {
    await ctx.api.admin.updateProvider({
      providerId: id,
      baseUrl: p.baseUrl,
      apiKey: ctx.secrets.get(p.name),
      connectTimeoutMs: p.connectTimeoutMs,
      headersTimeoutMs: p.headersTimeoutMs,
      bodyTimeoutMs: p.bodyTimeoutMs,
      maxInFlight: p.maxInFlight,
      apiVersion: p.apiVersion ?? undefined,
      updateMask: { paths: changed.map(snakeCase) },
    });
  },
  async remove(ctx, id) {
    await ctx.api.admin.deleteProvider({ providerId: id });
  },
  toFile: (p) => withoutDefaults({
    name: p.name,
    kind: p.kind,
    baseUrl: p.baseUrl,
    apiKey: p.apiKey === null ? null : { env: exportedKeyVariable(p.name) },
    connectTimeoutMs: p.connectTimeoutMs,
    headersTimeoutMs: p.headersTimeoutMs,
    bodyTimeoutMs: p.bodyTimeoutMs,
    maxInFlight: p.maxInFlight,
    apiVersion: p.apiVersion,
  }, defaults),
};

import { toJson } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ProviderKind } from "../../../gen/warden/gateway/v1/admin_pb.js";
import { RequestLogEntrySchema, UsageBucket, UsageGrouping, UsageRowSchema } from "../../../gen/warden/gateway/v1/usage_pb.js";
import type { Api } from "../client.ts";
import { json, table } from "../format.ts";
import { UsageError, type Io } from "../io.ts";
import { loadNames } from "../names.ts";

const kindNames: Record<number, string> = {
  [ProviderKind.ANTHROPIC]: "anthropic",
  [ProviderKind.OPENAI]: "openai",
  [ProviderKind.AZURE_OPENAI]: "azure_openai",
  [ProviderKind.OPENAI_COMPATIBLE]: "openai_compatible",
};

export async function listProviders(api: Api, io: Io, asJson: boolean): Promise<void> {
  const { items } = await api.admin.listProviders({});
  const rows = items.map((p) => ({
    id: p.id,
    name: p.name,
    kind: kindNames[p.kind] ?? "unspecified",
    baseUrl: p.baseUrl,
    hasApiKey: p.hasApiKey,
    apiKeySha256Prefix: p.apiKeySha256Prefix ?? null,
    maxInFlight: p.maxInFlight,
    apiVersion: p.apiVersion ?? null,
  }));
  if (asJson) {
    io.stdout.write(json(rows));
    return;
  }
  io.stdout.write(table(
    ["NAME", "KIND", "BASE URL", "KEY", "MAX IN FLIGHT"],
    rows.map((p) => [p.name, p.kind, p.baseUrl, p.hasApiKey ? `sha256:${p.apiKeySha256Prefix ?? "?"}` : "-", String(p.maxInFlight)]),
    "No providers.",
  ));
}

/**
 * A time: an ISO 8601 date or date-time, or a duration back from now (`90s`, `30m`, `2h`, `7d`).
 */
export function parseTime(flag: string, value: string, now: Date): Date {
  const duration = /^(\d+)([smhd])$/.exec(value);
  if (duration) {
    const unitMs = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[duration[2] as "s" | "m" | "h" | "d"];
    return new Date(now.getTime() - Number(duration[1]) * unitMs);
  }
  const date = /^\d{4}-\d{2}-\d{2}/.test(value) ? new Date(value) : new Date(Number.NaN);
  if (Number.isNaN(date.getTime())) throw new UsageError(`${flag} must be an ISO 8601 time (2026-01-31, 2026-01-31T12:00:00Z) or a duration back from now (30m, 2h, 7d)`);
  return date;
}

const groupings = { key: UsageGrouping.KEY, user: UsageGrouping.USER, group: UsageGrouping.GROUP, model: UsageGrouping.MODEL } as const;
const buckets = { none: UsageBucket.NONE, hour: UsageBucket.HOUR, day: UsageBucket.DAY } as const;

export interface UsageOptions {
  from?: string;
  to?: string;
  by: string;
  bucket: string;
  json: boolean;
}

export async function showUsage(api: Api, io: Io, options: UsageOptions): Promise<void> {
  if (!(options.by in groupings)) throw new UsageError("--by must be one of: key, user, group, model");
  if (!(options.bucket in buckets)) throw new UsageError("--bucket must be one of: none, hour, day");
  const bucketed = options.bucket !== "none";
  const now = new Date();
  const response = await api.usage.getUsage({
    startTime: options.from === undefined ? undefined : timestampFromDate(parseTime("--from", options.from, now)),
    endTime: options.to === undefined ? undefined : timestampFromDate(parseTime("--to", options.to, now)),
    groupBy: groupings[options.by as keyof typeof groupings],
    bucket: buckets[options.bucket as keyof typeof buckets],
  });
  if (options.json) {
    io.stdout.write(json({
      startTime: timestampDate(response.startTime!).toISOString(),
      endTime: timestampDate(response.endTime!).toISOString(),
      items: response.items.map((row) => toJson(UsageRowSchema, row)),
    }));
    return;
  }
  io.stdout.write(`From ${timestampDate(response.startTime!).toISOString()} to ${timestampDate(response.endTime!).toISOString()}, by ${options.by}:\n`);
  io.stdout.write(table(
    [...(bucketed ? [options.bucket.toUpperCase()] : []), options.by.toUpperCase(), "REQUESTS", "INPUT TOKENS", "OUTPUT TOKENS", "TOTAL TOKENS", "COST USD"],
    response.items.map((row) => [
      ...(bucketed ? [row.bucketStart ? timestampDate(row.bucketStart).toISOString() : "-"] : []),
      row.name ?? row.subject ?? "-",
      String(row.requests),
      String(row.inputTokens),
      String(row.outputTokens),
      String(row.totalTokens),
      row.costUsd.toFixed(6),
    ]),
    "No usage.",
  ));
}

export interface LogOptions {
  since?: string;
  until?: string;
  model?: string;
  status?: string;
  key?: string;
  user?: string;
  provider?: string;
  endpoint?: string;
  errorType?: string;
  superseded: boolean;
  requestId?: string;
  page?: string;
  perPage?: string;
  json: boolean;
}

export async function showLogs(api: Api, io: Io, options: LogOptions): Promise<void> {
  const now = new Date();
  const status = options.status === undefined ? undefined : integer("--status", options.status, 100, 599);
  // Keys and users by name or ID.
  const names = options.key !== undefined || options.user !== undefined ? await loadNames(api) : undefined;
  const keyId = options.key === undefined ? undefined : (names!.id("key", options.key) ?? options.key);
  const userId = options.user === undefined ? undefined : (names!.id("user", options.user) ?? options.user);
  const { items, nextPage } = await api.usage.listRequestLog({
    startTime: options.since === undefined ? undefined : timestampFromDate(parseTime("--since", options.since, now)),
    endTime: options.until === undefined ? undefined : timestampFromDate(parseTime("--until", options.until, now)),
    model: options.model,
    status,
    keyId,
    userId,
    provider: options.provider,
    endpoint: options.endpoint,
    errorType: options.errorType,
    superseded: options.superseded || undefined,
    requestId: options.requestId,
    page: options.page === undefined ? undefined : integer("--page", options.page, 1, 1_000_000),
    perPage: options.perPage === undefined ? undefined : integer("--per-page", options.perPage, 1, 1000),
  });
  if (options.json) {
    io.stdout.write(json({ items: items.map((entry) => toJson(RequestLogEntrySchema, entry)), nextPage: nextPage ?? null }));
    return;
  }
  io.stdout.write(table(
    ["TIME", "STATUS", "ENDPOINT", "MODEL", "PROVIDER", "KEY", "TOKENS IN/OUT", "LATENCY MS", "COST USD", "REQUEST ID"],
    items.map((e) => [
      timestampDate(e.time!).toISOString(),
      String(e.status),
      e.endpoint,
      e.model ?? "-",
      e.provider ?? "-",
      e.keyName ?? e.keyId ?? "-",
      `${e.inputTokens}/${e.outputTokens}`,
      String(e.latencyMs),
      e.costUsd === undefined ? "-" : e.costUsd.toFixed(6),
      e.requestId,
    ]),
    "No requests.",
  ));
  if (nextPage !== undefined) io.stdout.write(`More: --page ${nextPage}\n`);
}

function integer(flag: string, value: string, min: number, max: number): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || n > max) throw new UsageError(`${flag} must be an integer from ${min} to ${max}`);
  return n;
}

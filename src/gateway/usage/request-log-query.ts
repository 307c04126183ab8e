import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate, TimestampSchema, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { ListRequestLogRequest, ListRequestLogResponseSchema } from "../../../gen/warden/gateway/v1/usage_pb.js";
import { invalidArgument } from "../../platform/errors.ts";
import { checkLength, requireUuid } from "../../platform/validate.ts";
import type { Redactions } from "./request-log.ts";

/** The request log is larger than the other lists: a page may hold up to 1,000 entries. */
export const maxRequestLogPerPage = 1_000;
const defaultPerPage = 100;
const day = 24 * 3_600_000;

interface Row {
  id: string;
  request_id: string;
  /** Seconds since the epoch, with the microseconds: exact, where a Date would cut them. */
  epoch: string;
  workspace_id: string | null;
  key_id: string | null;
  key_name: string | null;
  user_id: string | null;
  group_ids: string[];
  endpoint: string;
  model: string | null;
  provider: string | null;
  status: number;
  error_type: string | null;
  latency_ms: number;
  ttfb_ms: number | null;
  input_tokens: string;
  output_tokens: string;
  tokens_estimated: boolean;
  guardrail_verdict: string | null;
  superseded: boolean;
  cached_input_tokens: string;
  cost_usd: string | null;
  redactions: Redactions | null;
}

/** Exact-match text filters: their REST name, their column, and the column's width. */
const textFilters = [
  ["model", "model", 255],
  ["provider", "provider", 64],
  ["endpoint", "endpoint", 16],
  ["errorType", "error_type", 32],
  ["requestId", "request_id", 128],
] as const;

/** "1764029232.123456" (or "-1.5", or "1764029232") as a Timestamp, to the microsecond. */
function timestampOf(epoch: string): Timestamp {
  const [whole, fraction = ""] = epoch.split(".");
  const negative = whole!.startsWith("-");
  let seconds = BigInt(whole!);
  let nanos = Number(fraction.padEnd(9, "0").slice(0, 9));
  // -1.5 is 1.5 s before the epoch: seconds -2 and nanos 500,000,000, as Timestamp counts them.
  if (negative && nanos > 0) {
    seconds -= 1n;
    nanos = 1_000_000_000 - nanos;
  }
  return create(TimestampSchema, { seconds, nanos });
}

/**
 * One page of the caller's workspace's request log, newest first (time desc, id desc: ids are
 * unique, so the order is total and a page is the same on every read of an unchanged window).
 *
 * Pages are numbered, as in every other list of the API (src/platform/pagination.ts; the REST
 * facade renders the next one as `x-next`), and asked for with `limit + 1` rows to know whether
 * one follows.
 *
 * Indexes: `workspace_id = ? and time >= ? and time < ?` is a range of gateway_request_log_time_idx
 * (workspace_id, time), read backwards for `time desc`; with keyId the planner may take
 * gateway_request_log_key_idx (key_id, time) instead, also a range read backwards (a key belongs
 * to one workspace, so the workspace condition only re-checks). The other filters are checked on
 * the rows of that range: the window (24 h by default) bounds the scan. No index was added for
 * them: each would be paid by every write of the log, which is on the gateway's hot path, and
 * the one the range does not serve well, a request ID, is asked for rarely and within a window.
 *
 * Deadline: the statement runs on the call's EntityManager, whose connections carry the
 * everyday deadlines (statement_timeout and the client's query timeout, src/db/pools.ts), as
 * the usage service's other queries do.
 */
export async function listRequestLog(
  em: EntityManager,
  workspaceId: string,
  req: ListRequestLogRequest,
): Promise<MessageInitShape<typeof ListRequestLogResponseSchema>> {
  const page = req.page ?? 1;
  const perPage = req.perPage ?? defaultPerPage;
  if (!Number.isInteger(page) || page < 1) throw invalidArgument("page must be an integer of at least 1");
  if (!Number.isInteger(perPage) || perPage < 1 || perPage > maxRequestLogPerPage) {
    throw invalidArgument(`perPage must be an integer from 1 to ${maxRequestLogPerPage}`);
  }
  const end = req.endTime ? timestampDate(req.endTime) : new Date();
  const start = req.startTime ? timestampDate(req.startTime) : new Date(end.getTime() - day);
  if (start >= end) throw invalidArgument("startTime must be before endTime");

  const where = ["l.workspace_id = ?", "l.time >= ?", "l.time < ?", "l.superseded = ?"];
  const params: unknown[] = [workspaceId, start, end, req.superseded ?? false];
  if (req.keyId !== undefined) {
    where.push("l.key_id = ?");
    params.push(requireUuid("keyId", req.keyId));
  }
  if (req.userId !== undefined) {
    where.push("l.user_id = ?");
    params.push(requireUuid("userId", req.userId));
  }
  if (req.status !== undefined) {
    if (req.status < 100 || req.status > 599) throw invalidArgument("status must be an HTTP status code from 100 to 599");
    where.push("l.status = ?");
    params.push(req.status);
  }
  for (const [field, column, width] of textFilters) {
    const value = req[field];
    if (value === undefined) continue;
    where.push(`l.${column} = ?`);
    params.push(checkLength(field, value, width));
  }

  const rows = await em.execute<Row[]>(
    `select l.id::text as id, l.request_id, extract(epoch from l.time)::text as epoch, l.workspace_id::text as workspace_id, l.key_id::text as key_id,
            k.name as key_name, l.user_id::text as user_id, l.group_ids::text[] as group_ids, l.endpoint, l.model,
            l.provider, l.status, l.error_type, l.latency_ms, l.ttfb_ms, l.input_tokens::text as input_tokens,
            l.output_tokens::text as output_tokens, l.tokens_estimated, l.guardrail_verdict, l.superseded,
            l.cached_input_tokens::text as cached_input_tokens, l.cost_usd::text as cost_usd, l.redactions
       from gateway_request_log l
       left join gateway_key k on k.id = l.key_id and k.workspace_id = l.workspace_id
      where ${where.join(" and ")}
      order by l.time desc, l.id desc
      limit ? offset ?`,
    [...params, perPage + 1, (page - 1) * perPage],
  );
  const more = rows.length > perPage;
  return {
    items: rows.slice(0, perPage).map((row) => ({
      id: BigInt(row.id),
      requestId: row.request_id,
      time: timestampOf(row.epoch),
      workspaceId: row.workspace_id ?? undefined,
      keyId: row.key_id ?? undefined,
      keyName: row.key_name ?? undefined,
      userId: row.user_id ?? undefined,
      groupIds: row.group_ids,
      endpoint: row.endpoint,
      model: row.model ?? undefined,
      provider: row.provider ?? undefined,
      status: row.status,
      errorType: row.error_type ?? undefined,
      latencyMs: row.latency_ms,
      ttfbMs: row.ttfb_ms ?? undefined,
      inputTokens: BigInt(row.input_tokens),
      outputTokens: BigInt(row.output_tokens),
      tokensEstimated: row.tokens_estimated,
      guardrailVerdict: row.guardrail_verdict ?? undefined,
      superseded: row.superseded,
      cachedInputTokens: BigInt(row.cached_input_tokens),
      costUsd: row.cost_usd === null ? undefined : Number(row.cost_usd),
      redactions: redactionList(row.redactions),
    })),
    nextPage: more ? page + 1 : undefined,
  };
}

/** The stored `{"input": {"CREDIT_CARD": 1}}` as a list, input first, then by type. */
function redactionList(redactions: Redactions | null): { stage: string; entityType: string; count: number }[] {
  if (!redactions) return [];
  return (["input", "output"] as const).flatMap((stage) =>
    Object.entries(redactions[stage] ?? {})
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([entityType, count]) => ({ stage, entityType, count })),
  );
}

import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { UsageBucket, UsageGrouping, type GatewayUsageService } from "../../../gen/warden/gateway/v1/usage_pb.js";
import { emOf, principalOf } from "../../platform/context.ts";
import { invalidArgument } from "../../platform/errors.ts";
import { usageLimitMessage } from "../admin/usage-limits.ts";
import { UsageLimitEntity } from "../config/entities.ts";
import { usageLimitOf } from "../config/snapshot.ts";
import type { CounterStore } from "../limits/types.ts";
import { listRequestLog } from "./request-log-query.ts";

/** The request-log column each grouping sums by; groups are a list, so they are unnested. */
const subjectColumn: Record<UsageGrouping, string> = {
  [UsageGrouping.UNSPECIFIED]: "key_id::text",
  [UsageGrouping.KEY]: "key_id::text",
  [UsageGrouping.USER]: "user_id::text",
  [UsageGrouping.GROUP]: "unnest(case when cardinality(group_ids) = 0 then array[null]::uuid[] else group_ids end)::text",
  [UsageGrouping.MODEL]: "model",
};

/** The key's, user's or group's name, joined to each row (`u`); a model row is named by its model. */
const nameColumn: Record<UsageGrouping, string> = {
  [UsageGrouping.UNSPECIFIED]: "n.name",
  [UsageGrouping.KEY]: "n.name",
  [UsageGrouping.USER]: "n.name",
  [UsageGrouping.GROUP]: "n.name",
  [UsageGrouping.MODEL]: "u.subject",
};
const nameJoin: Record<UsageGrouping, string> = {
  [UsageGrouping.UNSPECIFIED]: "left join gateway_key n on n.id::text = u.subject",
  [UsageGrouping.KEY]: "left join gateway_key n on n.id::text = u.subject",
  [UsageGrouping.USER]: "left join gateway_user n on n.id::text = u.subject",
  [UsageGrouping.GROUP]: "left join gateway_group n on n.id::text = u.subject",
  [UsageGrouping.MODEL]: "",
};

/** Each bucket's start, in UTC; none: one bucket for the whole range. */
const bucketExpression: Record<UsageBucket, string> = {
  [UsageBucket.UNSPECIFIED]: "null::timestamptz",
  [UsageBucket.NONE]: "null::timestamptz",
  [UsageBucket.HOUR]: "date_trunc('hour', time, 'UTC')",
  [UsageBucket.DAY]: "date_trunc('day', time, 'UTC')",
};

interface UsageSqlRow {
  subject: string | null;
  /** As the driver returns timestamptz: text. */
  bucket: string | null;
  name: string | null;
  requests: string;
  input: string;
  output: string;
  cached: string;
  cost: string;
  estimated: string;
  unpriced: string;
}

const day = 24 * 3_600_000;

export interface UsageServiceOptions {
  consumption: Pick<CounterStore, "consumption">;
}

export function createGatewayUsageService(options: UsageServiceOptions): ServiceImpl<typeof GatewayUsageService> {
  return {
    async getUsage(req, ctx) {
      const end = req.endTime ? timestampDate(req.endTime) : new Date();
      const start = req.startTime ? timestampDate(req.startTime) : new Date(end.getTime() - day);
      if (start >= end) throw invalidArgument("startTime must be before endTime");
      const groupBy = req.groupBy || UsageGrouping.KEY;
      // Protobuf enums are open: a Connect or gRPC caller may send a number UsageGrouping lacks.
      if (!(groupBy in subjectColumn)) throw invalidArgument(`groupBy has an unknown value: ${groupBy}`);
      const bucket = req.bucket || UsageBucket.NONE;
      if (!(bucket in bucketExpression)) throw invalidArgument(`bucket has an unknown value: ${bucket}`);
      const rows = await emOf(ctx).execute<UsageSqlRow[]>(
        `select u.*, ${nameColumn[groupBy]} as name
           from (select subject, bucket, count(*) filter (where not superseded) as requests, sum(input_tokens) as input,
                        sum(output_tokens) as output, sum(cached_input_tokens) as cached, coalesce(sum(cost_usd), 0)::text as cost,
                        count(*) filter (where tokens_estimated) as estimated,
                        count(*) filter (where cost_usd is null and input_tokens + output_tokens > 0) as unpriced
                   from (select ${subjectColumn[groupBy]} as subject, ${bucketExpression[bucket]} as bucket, input_tokens, output_tokens,
                                cached_input_tokens, cost_usd, tokens_estimated, superseded
                           from gateway_request_log where workspace_id = ? and time >= ? and time < ?) as logged
                  group by subject, bucket) as u
           ${nameJoin[groupBy]}
          order by u.bucket nulls first, u.input + u.output desc, u.subject`,
        [principalOf(ctx).workspaceId, start, end],
      );
      return {
        startTime: timestampFromDate(start),
        endTime: timestampFromDate(end),
        groupBy,
        bucket,
        items: rows.map((row) => ({
          subject: row.subject ?? undefined,
          name: row.name ?? undefined,
          requests: BigInt(row.requests),
          inputTokens: BigInt(row.input),
          outputTokens: BigInt(row.output),
          totalTokens: BigInt(row.input) + BigInt(row.output),
          cachedInputTokens: BigInt(row.cached),
          // numeric(24,12) sums as text, so that no float rounds them on the way.
          costUsd: Number(row.cost),
          unpricedRequests: BigInt(row.unpriced),
          estimatedRequests: BigInt(row.estimated),
          bucketStart: row.bucket === null ? undefined : timestampFromDate(new Date(row.bucket)),
        })),
      };
    },

    async listLimitConsumption(_req, ctx) {
      const rows = await emOf(ctx).find(UsageLimitEntity, { workspaceId: principalOf(ctx).workspaceId }, { orderBy: [{ dateCreated: "asc" }, { id: "asc" }] });
      const limits = rows.map(usageLimitOf);
      const now = new Date();
      const consumption = await options.consumption.consumption(limits, now);
      return {
        items: rows.map((row) => {
          const spent = consumption.get(row.id);
          return {
            limit: usageLimitMessage(row),
            used: BigInt(spent?.used ?? 0),
            reserved: BigInt(spent?.reserved ?? 0),
            periodStart: spent?.periodStart ? timestampFromDate(spent.periodStart) : undefined,
            resetsAt: spent?.resetsAt ? timestampFromDate(spent.resetsAt) : undefined,
          };
        }),
      };
    },

    listRequestLog(req, ctx) {
      return listRequestLog(emOf(ctx), principalOf(ctx).workspaceId, req);
    },
  };
}

import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { UsageGrouping, type GatewayUsageService } from "../../../gen/warden/gateway/v1/usage_pb.js";
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
      const rows = await emOf(ctx).execute<{ subject: string | null; requests: string; input: string; output: string; estimated: string }[]>(
        `select subject, count(*) filter (where not superseded) as requests, sum(input_tokens) as input, sum(output_tokens) as output,
                count(*) filter (where tokens_estimated) as estimated
           from (select ${subjectColumn[groupBy]} as subject, input_tokens, output_tokens, tokens_estimated, superseded
                   from gateway_request_log where workspace_id = ? and time >= ? and time < ?) as logged
          group by subject order by sum(input_tokens + output_tokens) desc, subject`,
        [principalOf(ctx).workspaceId, start, end],
      );
      return {
        startTime: timestampFromDate(start),
        endTime: timestampFromDate(end),
        groupBy,
        items: rows.map((row) => ({
          subject: row.subject ?? undefined,
          requests: BigInt(row.requests),
          inputTokens: BigInt(row.input),
          outputTokens: BigInt(row.output),
          totalTokens: BigInt(row.input) + BigInt(row.output),
          estimatedRequests: BigInt(row.estimated),
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

import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { PipelineDataService, RowFilter } from "../../gen/warden/pipelines/v1/data_pb.js";
import { emOf, principalOf } from "../platform/context.ts";
import { invalidArgument, notFound } from "../platform/errors.ts";
import { pageOf, paged } from "../platform/pagination.ts";
import { requireUuid } from "../platform/validate.ts";
import type { RowIngest } from "./ingest.ts";
import { pipelineTarget, type PipelineTarget } from "./queries.ts";
import { loadRows, type DataFiles } from "./load.ts";
import { updateMapping } from "./rows/config.ts";
import type { RowQuery } from "./rows/filters.ts";
import { rowPatch } from "./rows/normalize.ts";
import type { RowStore } from "./rows/row-store.ts";

export interface DataServiceOptions {
  rows: RowStore;
  ingest: RowIngest;
  files: DataFiles;
}

function target(ctx: HandlerContext, pipelineId: string): Promise<PipelineTarget> {
  return pipelineTarget(emOf(ctx), requireUuid("inferencePipelineId", pipelineId), principalOf(ctx).workspaceId);
}

function inferenceIdOf(value: string): string {
  if (value === "") throw invalidArgument("inferenceId is required");
  if (value.length > 1024) throw invalidArgument("inferenceId must be at most 1024 characters");
  return value;
}

function rowQuery(filter: RowFilter | undefined, sortColumn: string | undefined, asc: boolean | undefined): RowQuery {
  return {
    // A null value arrives unset.
    columnFilters: (filter?.columnFilters ?? []).map((f) => ({
      measurement: f.measurement,
      operator: f.operator,
      value: f.value ? toJson(ValueSchema, f.value) : undefined,
    })),
    rowIdList: filter?.rowIdList ?? [],
    excludeRowIdList: filter?.excludeRowIdList ?? [],
    searchQueryAnd: filter?.searchQueryAnd ?? [],
    searchQueryOr: filter?.searchQueryOr ?? [],
    notSearchQueryAnd: filter?.notSearchQueryAnd ?? [],
    notSearchQueryOr: filter?.notSearchQueryOr ?? [],
    sortColumn: sortColumn === "" ? undefined : sortColumn,
    asc: asc ?? false,
  };
}

/** Data in and rows out of inference pipelines (spec/evaluation-contract.md, "Production data in"). */
export function createPipelineDataService(options: DataServiceOptions): ServiceImpl<typeof PipelineDataService> {
  return {
    async streamData(req, ctx) {
      const pipeline = await target(ctx, req.inferencePipelineId);
      if (!req.config) throw invalidArgument("config is required");
      await options.ingest.streamTo(pipeline, req.config, req.rows);
      return { success: true };
    },

    async loadData(req, ctx) {
      const pipeline = await target(ctx, req.inferencePipelineId);
      if (!req.config) throw invalidArgument("config is required");
      if (req.storageUri === "") throw invalidArgument("storageUri is required");
      await loadRows(options.files, options.rows, pipeline, {
        storageUri: req.storageUri,
        config: req.config,
        merge: req.performDataMerge,
        signal: ctx.signal,
      });
      return { success: true };
    },

    async updateRow(req, ctx) {
      const pipeline = await target(ctx, req.inferencePipelineId);
      const inferenceId = inferenceIdOf(req.inferenceId);
      if (!req.update?.row) throw invalidArgument("row is required");
      const mapping = updateMapping(req.update.config);
      const patch = rowPatch(req.update.row, mapping, Date.now() / 1000, "row", inferenceId);
      const missing = await options.rows.write(pipeline.id, {}, (writer) => writer.merge([patch], mapping));
      if (missing.length > 0) throw notFound("Row not found");
      return { success: true };
    },

    async getRow(req, ctx) {
      const pipeline = await target(ctx, req.inferencePipelineId);
      const row = await options.rows.get(pipeline.id, inferenceIdOf(req.inferenceId));
      if (!row) throw notFound("Row not found");
      return { row, success: true };
    },

    async deleteRow(req, ctx) {
      const pipeline = await target(ctx, req.inferencePipelineId);
      const deleted = await options.rows.delete(pipeline.id, inferenceIdOf(req.inferenceId));
      if (deleted === 0) throw notFound("Row not found");
      return {};
    },

    async listRows(req, ctx) {
      const pipeline = await target(ctx, req.inferencePipelineId);
      const page = pageOf(req);
      const query = rowQuery(req.filter, req.sortColumn, req.asc);
      const rows = await options.rows.list(pipeline.id, query, page.limit + 1, page.offset);
      return paged(rows, page);
    },
  };
}

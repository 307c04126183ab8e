import { Migration } from "@mikro-orm/migrations";

/**
 * The row store of inference pipelines (src/pipelines/rows/). Rows are read by pipeline and time
 * window, so the table is partitioned by month of the row's timestamp (partitions are made as rows
 * arrive: src/pipelines/rows/partitions.ts); the canonical columns that evaluation reads are real
 * columns, and the row as sent is JSONB. Row IDs come from one sequence, so that they are unique
 * across partitions; inference IDs are indexed per pipeline for updates, retrieval and merges.
 * The rows of a deleted pipeline are purged in batches after it is gone (inference_row_purge),
 * since one delete of millions of rows would outlast any statement deadline.
 */
export class Migration20261124030000 extends Migration {
  override up(): void {
    this.addSql(`
      create sequence inference_row_id_seq as bigint cache 100;
      create table inference_row (
        row_id bigint not null default nextval('inference_row_id_seq'),
        pipeline_id uuid not null,
        inference_id text not null,
        ts timestamptz not null,
        received_at timestamptz not null default now(),
        output text,
        ground_truth text,
        latency_ms double precision,
        cost double precision,
        num_tokens double precision,
        session_id text,
        user_id text,
        data jsonb not null
      ) partition by range (ts);
      alter sequence inference_row_id_seq owned by inference_row.row_id;
      create index inference_row_window_idx on inference_row (pipeline_id, ts);
      create index inference_row_inference_id_idx on inference_row (pipeline_id, inference_id);
      create table inference_row_purge (
        pipeline_id uuid primary key,
        requested_at timestamptz not null default now()
      );
      alter table inference_pipeline add column data_config jsonb;
      alter table inference_pipeline add column retention_days integer;
    `);
  }
}

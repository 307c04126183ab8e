import { Migration } from "@mikro-orm/migrations";

/** One row per gateway request, written in batches; old rows are deleted after the retention. */
export class Migration20261121040000 extends Migration {
  override up(): void {
    this.addSql(`
      create table gateway_request_log (
        id bigint generated always as identity primary key,
        request_id varchar(128) not null,
        time timestamptz not null,
        workspace_id uuid,
        key_id uuid,
        user_id uuid,
        group_ids uuid[] not null default '{}',
        endpoint varchar(16) not null,
        model varchar(255),
        provider varchar(64),
        status smallint not null,
        error_type varchar(32),
        latency_ms integer not null,
        ttfb_ms integer,
        input_tokens integer not null default 0,
        output_tokens integer not null default 0,
        tokens_estimated boolean not null default false,
        guardrail_verdict varchar(255)
      );
      create index gateway_request_log_time_idx on gateway_request_log (workspace_id, time);
      create index gateway_request_log_key_idx on gateway_request_log (key_id, time);
    `);
  }
}

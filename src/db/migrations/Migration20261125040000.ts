import { Migration } from "@mikro-orm/migrations";

/**
 * Cost: a workspace's own prices per model (and provider), the cost and the cached input of every
 * request in the request log, and usage limits in US dollars or in requests besides tokens.
 */
export class Migration20261125040000 extends Migration {
  override up(): void {
    this.addSql(`
      create table gateway_model_price (
        id uuid primary key,
        workspace_id uuid not null references workspace (id) on delete cascade deferrable initially deferred,
        provider_name varchar(64),
        model varchar(255) not null,
        input_micros bigint not null check (input_micros >= 0),
        output_micros bigint not null check (output_micros >= 0),
        cached_input_micros bigint check (cached_input_micros >= 0),
        date_created timestamptz not null,
        date_updated timestamptz not null
      );
    `);
    // One price per model and provider (or any provider): NULL is a value here.
    this.addSql(`create unique index gateway_model_price_unique on gateway_model_price (workspace_id, coalesce(provider_name, ''), model);`);
    this.addSql(
      `create trigger gateway_model_price_changed after insert or update or delete or truncate on gateway_model_price
       for each statement execute function warden_gateway_config_changed();`,
    );
    this.addSql(`alter table gateway_request_log add column cached_input_tokens bigint not null default 0, add column cost_usd numeric(24, 12);`);
    this.addSql(`alter table gateway_usage_limit add column unit varchar(8) not null default 'TOKENS';`);
    this.addSql(`alter table gateway_usage_limit drop constraint gateway_usage_limit_workspace_id_scope_subject_id_period_key;`);
    this.addSql(`alter table gateway_usage_limit add constraint gateway_usage_limit_unique unique (workspace_id, scope, subject_id, period, unit);`);
  }
}

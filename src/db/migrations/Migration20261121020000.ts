import { Migration } from "@mikro-orm/migrations";

/** Guardrail settings and usage limits of the gateway: configuration, so they notify like the rest. */
export class Migration20261121020000 extends Migration {
  override up(): void {
    this.addSql(`
      create table gateway_guardrail (
        id uuid primary key,
        workspace_id uuid not null references workspace (id) on delete cascade deferrable initially deferred,
        kind varchar(24) not null,
        stage varchar(8) not null,
        enabled boolean not null,
        pii_entity_types text[] not null default '{}',
        injection_threshold double precision,
        content_thresholds jsonb not null default '{}',
        on_error varchar(16) not null,
        model_path varchar(1000),
        tokenizer_path varchar(1000),
        classifier_url varchar(2000),
        classifier_timeout_ms integer,
        date_created timestamptz not null,
        date_updated timestamptz not null,
        unique (workspace_id, kind, stage)
      );

      create table gateway_usage_limit (
        id uuid primary key,
        workspace_id uuid not null references workspace (id) on delete cascade deferrable initially deferred,
        scope varchar(8) not null,
        subject_id uuid not null,
        period varchar(16) not null,
        token_limit bigint not null check (token_limit > 0),
        date_created timestamptz not null,
        date_updated timestamptz not null,
        unique (workspace_id, scope, subject_id, period)
      );
    `);
    for (const table of ["gateway_guardrail", "gateway_usage_limit"]) {
      this.addSql(
        `create trigger ${table}_changed after insert or update or delete or truncate on ${table}
         for each statement execute function warden_gateway_config_changed();`,
      );
    }
  }
}

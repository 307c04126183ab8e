import { Migration } from "@mikro-orm/migrations";

/**
 * The model gateway's configuration. Every change to these tables, by the API or by hand,
 * notifies `warden_gateway_config`, which every gateway process listens to.
 */
export class Migration20261121010000 extends Migration {
  override up(): void {
    this.addSql(`
      create table gateway_provider (
        id uuid primary key,
        workspace_id uuid not null references workspace (id) on delete cascade deferrable initially deferred,
        name varchar(64) not null,
        kind varchar(16) not null,
        base_url varchar(2000) not null,
        api_key_ciphertext bytea,
        connect_timeout_ms integer not null,
        headers_timeout_ms integer not null,
        body_timeout_ms integer not null,
        max_in_flight integer not null,
        api_version varchar(64),
        date_created timestamptz not null,
        date_updated timestamptz not null,
        unique (workspace_id, name)
      );

      create table gateway_routing_rule (
        id uuid primary key,
        workspace_id uuid not null references workspace (id) on delete cascade deferrable initially deferred,
        priority integer not null,
        models text[] not null default '{}',
        provider_name varchar(64) not null,
        upstream_model varchar(255),
        date_created timestamptz not null,
        date_updated timestamptz not null
      );

      create table gateway_user (
        id uuid primary key,
        workspace_id uuid not null references workspace (id) on delete cascade deferrable initially deferred,
        name varchar(255) not null,
        email varchar(254),
        date_created timestamptz not null
      );

      create table gateway_group (
        id uuid primary key,
        workspace_id uuid not null references workspace (id) on delete cascade deferrable initially deferred,
        name varchar(255) not null,
        date_created timestamptz not null,
        unique (workspace_id, name)
      );

      create table gateway_key (
        id uuid primary key,
        workspace_id uuid not null references workspace (id) on delete cascade deferrable initially deferred,
        name varchar(255),
        key_hash char(64) not null unique,
        key_prefix varchar(16) not null,
        user_id uuid references gateway_user (id) on delete set null deferrable initially deferred,
        group_ids uuid[] not null default '{}',
        disabled boolean not null default false,
        date_created timestamptz not null,
        date_updated timestamptz not null
      );

      create table gateway_access_rule (
        id uuid primary key,
        workspace_id uuid not null references workspace (id) on delete cascade deferrable initially deferred,
        effect varchar(8) not null,
        subject varchar(16) not null,
        subject_id uuid,
        models text[] not null,
        date_created timestamptz not null
      );

      create table gateway_settings (
        id integer primary key check (id = 1),
        max_in_flight integer not null,
        date_updated timestamptz not null
      );

      create function warden_gateway_config_changed() returns trigger language plpgsql as $$
      begin
        perform pg_notify('warden_gateway_config', tg_table_name);
        return null;
      end $$;
    `);
    for (const table of [
      "gateway_provider",
      "gateway_routing_rule",
      "gateway_user",
      "gateway_group",
      "gateway_key",
      "gateway_access_rule",
      "gateway_settings",
    ]) {
      this.addSql(
        `create trigger ${table}_changed after insert or update or delete or truncate on ${table}
         for each statement execute function warden_gateway_config_changed();`,
      );
    }
  }
}

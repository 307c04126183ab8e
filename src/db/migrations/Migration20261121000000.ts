import { Migration } from "@mikro-orm/migrations";

/**
 * The management API's first schema. Contexts keep plain ID columns rather than ORM relations,
 * so the ORM does not order inserts by foreign key: the constraints are checked at commit.
 */
export class Migration20261121000000 extends Migration {
  override up(): void {
    this.addSql(`
      create table app_user (
        id uuid primary key,
        email varchar(254) not null unique,
        name varchar(120),
        username varchar(64),
        date_created timestamptz not null
      );

      create table workspace (
        id uuid primary key,
        creator_id uuid references app_user (id) on delete set null deferrable initially deferred,
        name varchar(80) not null,
        slug varchar(32) not null unique,
        invite_code varchar(64) not null,
        status varchar(32) not null,
        saml_only_access boolean not null default false,
        wildcard_domains text[] not null default '{}',
        period_start_date timestamptz,
        period_end_date timestamptz,
        date_created timestamptz not null,
        date_updated timestamptz not null
      );

      create table workspace_member (
        workspace_id uuid not null references workspace (id) on delete cascade deferrable initially deferred,
        user_id uuid not null references app_user (id) on delete cascade deferrable initially deferred,
        role varchar(16) not null,
        date_created timestamptz not null,
        primary key (workspace_id, user_id)
      );

      create table api_key (
        id uuid primary key,
        workspace_id uuid not null references workspace (id) on delete cascade deferrable initially deferred,
        user_id uuid references app_user (id) on delete set null deferrable initially deferred,
        name varchar(120),
        role varchar(16) not null,
        key_hash char(64) not null unique,
        date_created timestamptz not null,
        date_updated timestamptz not null,
        date_last_used timestamptz,
        date_revoked timestamptz
      );
      create index api_key_workspace_idx on api_key (workspace_id);

      create table invite (
        id uuid primary key,
        workspace_id uuid not null references workspace (id) on delete cascade deferrable initially deferred,
        creator_id uuid not null,
        creator_name varchar(120),
        email varchar(120) not null,
        role varchar(16) not null,
        status varchar(16) not null,
        date_created timestamptz not null
      );
      create index invite_workspace_idx on invite (workspace_id, date_created, id);

      create table project (
        id uuid primary key,
        workspace_id uuid not null references workspace (id) on delete cascade deferrable initially deferred,
        creator_id uuid,
        name varchar(255) not null,
        description text,
        source varchar(8),
        task_type varchar(32) not null,
        purpose text,
        model_types text[] not null default '{}',
        model_developer text,
        data_retention_days integer,
        test_seq integer not null default 0,
        date_created timestamptz not null,
        date_updated timestamptz not null,
        unique (workspace_id, name)
      );
      create index project_workspace_idx on project (workspace_id, date_created, id);

      create table project_version (
        id uuid primary key,
        project_id uuid not null references project (id) on delete cascade deferrable initially deferred,
        workspace_id uuid not null,
        author_id uuid,
        message text not null,
        storage_uri text not null,
        file_size bigint,
        git_commit_ref text,
        git_commit_sha text,
        git_commit_url text,
        archived boolean not null default false,
        date_archived timestamptz,
        status varchar(16) not null,
        status_message text,
        deployment_status varchar(64) not null,
        date_created timestamptz not null
      );
      create index project_version_project_idx on project_version (project_id, date_created, id);

      create table inference_pipeline (
        id uuid primary key,
        project_id uuid not null references project (id) on delete cascade deferrable initially deferred,
        workspace_id uuid not null,
        name varchar(255) not null,
        description text,
        reference_dataset_uri varchar(1000),
        status varchar(16) not null,
        status_message text,
        date_last_evaluated timestamptz,
        date_last_sample_received timestamptz,
        date_of_next_evaluation timestamptz,
        total_records_count bigint,
        date_created timestamptz not null,
        date_updated timestamptz not null
      );
      create index inference_pipeline_project_idx on inference_pipeline (project_id, date_created, id);

      create table test (
        id uuid primary key,
        project_id uuid not null references project (id) on delete cascade deferrable initially deferred,
        workspace_id uuid not null,
        number integer not null,
        name varchar(255) not null,
        description text,
        type varchar(16) not null,
        subtype varchar(64) not null,
        thresholds jsonb not null,
        archived boolean not null default false,
        suggested boolean not null default false,
        uses_ml_model boolean not null default false,
        uses_training_dataset boolean not null default false,
        uses_validation_dataset boolean not null default false,
        uses_reference_dataset boolean not null default false,
        uses_production_data boolean not null default false,
        evaluation_window integer,
        delay_window integer,
        default_to_all_pipelines boolean,
        include_pipelines text[],
        exclude_pipelines text[],
        include_historical_data boolean,
        comment_count integer not null default 0,
        creator_id uuid,
        origin_project_version_id uuid references project_version (id) on delete set null deferrable initially deferred,
        date_created timestamptz not null,
        date_updated timestamptz not null,
        date_archived timestamptz,
        unique (project_id, number)
      );

      create table test_result (
        id uuid primary key,
        test_id uuid not null references test (id) on delete cascade deferrable initially deferred,
        workspace_id uuid not null,
        project_version_id uuid references project_version (id) on delete cascade deferrable initially deferred,
        inference_pipeline_id uuid references inference_pipeline (id) on delete cascade deferrable initially deferred,
        status varchar(16) not null,
        status_message text,
        expected_values jsonb not null default '[]',
        date_data_starts timestamptz,
        date_data_ends timestamptz,
        date_created timestamptz not null,
        date_updated timestamptz not null
      );
      create index test_result_version_idx on test_result (project_version_id, date_created, id);
      create index test_result_pipeline_idx on test_result (inference_pipeline_id, date_created, id);
      create index test_result_test_idx on test_result (test_id);

      create table task_result (
        id uuid primary key,
        workspace_id uuid not null references workspace (id) on delete cascade deferrable initially deferred,
        type varchar(64) not null,
        status varchar(16) not null,
        payload jsonb not null,
        failures jsonb not null default '[]',
        result jsonb,
        error text,
        date_created timestamptz not null,
        date_updated timestamptz not null,
        date_completed timestamptz
      );
      create index task_result_open_idx on task_result (status) where status in ('queued', 'running');
    `);
  }
}

import { Migration } from "@mikro-orm/migrations";

/**
 * Gateway traffic as rows of an inference pipeline: a gateway key may name a pipeline, and a
 * workspace may name one for its keys that name none (gateway_workspace_settings, one row per
 * workspace that has set anything). Both are gateway configuration, so they notify every gateway
 * process like the rest (gateway_key has its trigger already).
 *
 * No foreign key to inference_pipeline: the pipeline belongs to another context, and one deleted
 * later only makes the gateway's rows for it be dropped (and counted) when written.
 */
export class Migration20261124040000 extends Migration {
  override up(): void {
    this.addSql(`
      alter table gateway_key add column inference_pipeline_id uuid;
      create table gateway_workspace_settings (
        workspace_id uuid primary key references workspace (id) on delete cascade deferrable initially deferred,
        inference_pipeline_id uuid,
        date_updated timestamptz not null
      );
      create trigger gateway_workspace_settings_changed after insert or update or delete or truncate on gateway_workspace_settings
        for each statement execute function warden_gateway_config_changed();
    `);
  }
}

import { Migration } from "@mikro-orm/migrations";

/**
 * The schedule of monitoring evaluation (src/tests/evaluation/schedule.ts): per test and pipeline,
 * the start of the first window not yet queued. And the judge model a workspace sets for LLM
 * tests: its model and its gateway key, sealed with the master key as provider secrets are.
 */
export class Migration20261124060000 extends Migration {
  override up(): void {
    this.addSql(`
      create table test_schedule (
        test_id uuid not null references test (id) on delete cascade,
        pipeline_id uuid not null references inference_pipeline (id) on delete cascade,
        next_window_start timestamptz not null,
        primary key (test_id, pipeline_id)
      );
      alter table gateway_workspace_settings add column judge_model text;
      alter table gateway_workspace_settings add column judge_key_sealed bytea;
    `);
  }
}

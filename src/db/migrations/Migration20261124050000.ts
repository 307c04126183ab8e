import { Migration } from "@mikro-orm/migrations";

/**
 * One result per monitoring test, pipeline and window: evaluating a window again keeps its result,
 * or replaces it when asked to overwrite, and two evaluations of one window at once cannot both
 * write one (src/tests/evaluation/).
 */
export class Migration20261124050000 extends Migration {
  override up(): void {
    this.addSql(`
      create unique index test_result_window_idx on test_result (test_id, inference_pipeline_id, date_data_starts)
        where inference_pipeline_id is not null;
    `);
  }
}

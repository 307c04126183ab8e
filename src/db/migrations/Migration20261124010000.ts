import { Migration } from "@mikro-orm/migrations";

/**
 * The request log's token counts as bigint, as the usage counters are: a provider may report more
 * than an integer holds (3e9 input tokens has been seen from a faulty one), and the usage API sums
 * input and output per row. Rewrites the table once; the request log holds its rows in memory
 * and writes them when the table is back.
 */
export class Migration20261124010000 extends Migration {
  override up(): void {
    this.addSql(`
      alter table gateway_request_log
        alter column input_tokens type bigint,
        alter column output_tokens type bigint;
    `);
  }
}

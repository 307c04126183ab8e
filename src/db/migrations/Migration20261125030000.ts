import { Migration } from "@mikro-orm/migrations";

/** A key may ask for Server-Timing on its answers, when the gateway does not give it to every key. */
export class Migration20261125030000 extends Migration {
  override up(): void {
    this.addSql(`alter table gateway_key add column server_timing boolean not null default false;`);
  }
}

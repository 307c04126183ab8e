import { Migration } from "@mikro-orm/migrations";

/**
 * A gateway call that moves to its rule's next target leaves one row per attempt: the attempts it
 * moved on from are `superseded`, so that usage counts each call once.
 */
export class Migration20261124090000 extends Migration {
  override up(): void {
    this.addSql(`alter table gateway_request_log add column superseded boolean not null default false;`);
  }
}

import { Migration } from "@mikro-orm/migrations";

/**
 * Usage-limit counters (src/gateway/limits). Exported so that tests can apply it to a database
 * of their own.
 *
 * usage_counter: one row per limit and period; `used` is settled usage (durable, whichever store
 * keeps the live counters), `reserved` the admitted but unsettled reservations (PostgreSQL store
 * only; with Redis, Redis holds them). `period_start` is '-infinity' for all-time limits, so the
 * primary key needs no nullable column. No foreign key to the limit itself: a counter outlives an
 * edit of its limit, and its limit's table belongs to the control plane.
 *
 * usage_reservation: one row per reservation, for idempotent settles and for sweeping the
 * reservations of a crashed process. State: reserved → settled | released | expired; an expired
 * one may still settle (its tokens count). Finished rows are pruned after a day.
 */
export const usageCountersSql = `
  create table usage_counter (
    limit_id uuid not null,
    period_start timestamptz not null,
    workspace_id uuid not null references workspace (id) on delete cascade deferrable initially deferred,
    used bigint not null default 0,
    reserved bigint not null default 0,
    primary key (limit_id, period_start)
  );
  create index usage_counter_workspace_idx on usage_counter (workspace_id);

  create table usage_reservation (
    id uuid primary key,
    workspace_id uuid not null references workspace (id) on delete cascade deferrable initially deferred,
    limit_ids uuid[] not null,
    period_starts timestamptz[] not null,
    amount bigint not null,
    state varchar(16) not null,
    tokens bigint,
    date_created timestamptz not null,
    date_finished timestamptz
  );
  create index usage_reservation_workspace_idx on usage_reservation (workspace_id);
  create index usage_reservation_open_idx on usage_reservation (date_created) where state = 'reserved';
  create index usage_reservation_finished_idx on usage_reservation (date_finished) where state <> 'reserved';
`;

export class Migration20261121030000 extends Migration {
  override up(): void {
    this.addSql(usageCountersSql);
  }
}

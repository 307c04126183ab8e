import { Migration } from "@mikro-orm/migrations";

/**
 * Usage leases: each process's counter store holds a lease (usage_lease), renewed while the
 * process runs, and each reservation records the lease it was made under (usage_reservation.lease_id),
 * so that the reservations of a process that died are released once its lease lapses, in seconds,
 * instead of after the 15-minute age backstop. Reservations made before this migration have no
 * lease: the backstop alone covers them.
 */
export class Migration20261124020000 extends Migration {
  override up(): void {
    this.addSql(`
      create table usage_lease (
        id uuid primary key,
        expires_at timestamptz not null
      );
      create index usage_lease_expires_idx on usage_lease (expires_at);
      alter table usage_reservation add column lease_id uuid;
      create index usage_reservation_lease_idx on usage_reservation (lease_id) where state = 'reserved';
    `);
  }
}

import { sql, type Kysely } from 'kysely';

/**
 * Scoped API keys and a readable audit trail.
 *
 * - `api_keys.projects`: the projects a key may see and touch (a JSON array of project ids), null
 *   for every project; `api_keys.access`: `read`, `write` or `admin` (what it may do). Existing
 *   keys become unrestricted (`null`, `admin`): they behave exactly as before.
 * - `audit_log.key_id`, `key_name`, `request_id`: who did it (the key, and its name at the time)
 *   and in which request; `key_id` is filled from the old `actor` (`api_key:<id>`). Indexes for the
 *   newest-first reads of GET /audit and its filters.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('api_keys').addColumn('projects', 'text').execute();
  await db.schema
    .alterTable('api_keys')
    .addColumn('access', 'text', (c) => c.notNull().defaultTo('admin'))
    .execute();
  for (const column of ['key_id', 'key_name', 'request_id']) {
    await db.schema.alterTable('audit_log').addColumn(column, 'text').execute();
  }
  await sql`update audit_log set key_id = substr(actor, 9) where actor like 'api_key:%'`.execute(
    db,
  );
  await sql`update audit_log set key_name = (select k.name from api_keys k where k.id = audit_log.key_id)
    where key_id is not null`.execute(db);
  await db.schema.dropIndex('audit_log_at').execute();
  await db.schema.createIndex('audit_log_at').on('audit_log').columns(['at', 'id']).execute();
  await db.schema
    .createIndex('audit_log_action_at')
    .on('audit_log')
    .columns(['action', 'at'])
    .execute();
  await db.schema
    .createIndex('audit_log_key_at')
    .on('audit_log')
    .columns(['key_id', 'at'])
    .execute();
  await db.schema
    .createIndex('audit_log_target_at')
    .on('audit_log')
    .columns(['target', 'at'])
    .execute();
}

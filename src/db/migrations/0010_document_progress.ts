import { sql, type Kysely } from 'kysely';
import type { Database } from '../database.js';

/**
 * `knowledge_documents.progress`: JSON text `{stage, done, total}` of the run in progress, written
 * by whichever instance runs it (throttled) so that every instance can show it; read only while the
 * document is `indexing`.
 */
export async function up(db: Kysely<unknown>, _driver: Database['driver']): Promise<void> {
  await sql`alter table knowledge_documents add column progress text`.execute(db);
}

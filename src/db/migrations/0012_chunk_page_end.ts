import { sql, type Kysely } from 'kysely';
import type { Database } from '../database.js';

/**
 * Clean sections: `knowledge_chunks.page_end`, the last page a chunk's text is on (null for unpaged
 * formats). A chunk used to end on the page it started on; a heading at the foot of a page now goes
 * with the text on the next one, so a chunk may span pages. Chunks written before this migration
 * end on their first page.
 */
export async function up(db: Kysely<unknown>, _driver: Database['driver']): Promise<void> {
  await sql`alter table knowledge_chunks add column page_end integer`.execute(db);
  await sql`update knowledge_chunks set page_end = page where page is not null`.execute(db);
}

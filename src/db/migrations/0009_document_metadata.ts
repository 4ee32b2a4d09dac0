import { sql, type Kysely } from 'kysely';

/**
 * Every document carries `metadata`: a JSON object (text), `{}` unless set at upload or with
 * `PATCH …/documents/{id}`; retrieval hits carry it as `documentMetadata`. Existing rows get `{}`.
 * The same statement on both dialects.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table knowledge_documents add column metadata text not null default '{}'`.execute(
    db,
  );
}

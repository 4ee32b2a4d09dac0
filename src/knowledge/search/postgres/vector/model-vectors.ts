/**
 * The vectors of each embedding model on PostgreSQL, for a model switch
 * (embeddings/model-switch.ts): how many current chunks each model's vectors cover, and dropping
 * the tables of models no longer used (unregistered and dropped in one transaction, under the
 * lock that guards a table's creation; `drop table` only unlinks files, whatever the size).
 */
import type { Pool, PoolClient } from 'pg';
import { withTransaction } from '../../../../db/postgres.js';
import type { VectorCoverage } from '../../chunk-store.js';
import { LOCK_CLASS } from './vector-tables.js';

/** How long the drop waits for searches and writes that hold a table (then it is tried later). */
const DROP_LOCK_TIMEOUT = '10s';

/**
 * Whether anything of another model than `target` is stored: a vector table, or a document
 * embedded with it. Cheap (the registry and one document lookup): what a start asks first.
 */
export async function otherModelsStored(
  client: Pool | PoolClient,
  target: string,
): Promise<boolean> {
  const { rows } = await client.query<{ other: boolean }>(
    `select exists (select 1 from knowledge_vector_tables where model <> $1)
         or exists (select 1 from knowledge_documents where status <> 'deleting'
              and embedding_model is not null and embedding_model <> $1) as other`,
    [target],
  );
  return rows[0]?.other === true;
}

/**
 * The current chunks and each model's coverage of them. Nothing of another model stored: the
 * target covers every chunk without a count per table.
 */
export async function vectorCoverage(pool: Pool, target: string): Promise<VectorCoverage> {
  return withTransaction(
    pool,
    'begin isolation level repeatable read read only',
    async (client) => {
      const { rows } = await client.query<{ chunks: number }>(
        `select count(*)::int as chunks from knowledge_chunks c
         join knowledge_documents d on d.id = c.document_id where d.status <> 'deleting'`,
      );
      const chunks = rows[0]?.chunks ?? 0;
      if (!(await otherModelsStored(client, target))) {
        return { chunks, byModel: new Map([[target, chunks]]) };
      }
      const tables = (
        await client.query<{ model: string; table_name: string }>(
          'select model, table_name from knowledge_vector_tables order by model, dimensions',
        )
      ).rows;
      const byModel = new Map<string, number>();
      for (const { model, table_name: table } of tables) {
        const counted = await client.query<{ n: number }>(
          `select count(*)::int as n from ${table} v join knowledge_chunks c on c.id = v.chunk_id
         join knowledge_documents d on d.id = c.document_id where d.status <> 'deleting'`,
        );
        byModel.set(model, Math.max(byModel.get(model) ?? 0, counted.rows[0]?.n ?? 0));
      }
      return { chunks, byModel };
    },
  );
}

/** Unregisters and drops every vector table of another model than `keep`; returns them. */
export async function dropOtherVectors(
  pool: Pool,
  keep: string,
  stop: () => boolean,
): Promise<{ model: string; table: string }[]> {
  const { rows } = await pool.query<{ model: string; table_name: string }>(
    'select model, table_name from knowledge_vector_tables where model <> $1',
    [keep],
  );
  const dropped: { model: string; table: string }[] = [];
  for (const { model, table_name: table } of rows) {
    if (stop()) break;
    await withTransaction(pool, 'begin', async (client) => {
      await client.query(`set local lock_timeout = '${DROP_LOCK_TIMEOUT}'`);
      await client.query('select pg_advisory_xact_lock($1, hashtext($2))', [LOCK_CLASS, table]);
      await client.query('delete from knowledge_vector_tables where table_name = $1', [table]);
      await client.query(`drop table if exists ${table}`);
    });
    dropped.push({ model, table });
  }
  return dropped;
}

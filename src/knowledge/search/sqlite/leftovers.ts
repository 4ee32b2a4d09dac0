/**
 * What a start purges on SQLite (sqlite-chunk-writes.ts `purge`): the rows of documents being
 * deleted, and the rows a crashed or replaced indexing run left behind, which searches already
 * ignore.
 */
import type { Statements } from './statements.js';

/**
 * Documents with rows to purge: hidden ones, and ones with a crashed run's or old version's
 * (sqlite-chunk-writes.ts PURGEABLE: a run token that is neither the document's current one nor
 * its running one's).
 * Run at every start, before the server listens: each document's distinct run tokens are
 * walked through the chunks' (document_id, run_token) index, a seek per token (one or two a
 * document), where a scan of every chunk took 0.3 s at 1M chunks.
 */
export function purgeableDocuments(statement: Statements): {
  hidden: string[];
  leftovers: string[];
} {
  const hidden = statement(`select id from knowledge_documents where status = 'deleting'`)
    .pluck()
    .all() as string[];
  const documents = statement(
    `select id, chunk_token as current, index_token as running
     from knowledge_documents where status <> 'deleting'`,
  ).all() as { id: string; current: string | null; running: string | null }[];
  const untokened = statement(
    'select exists (select 1 from knowledge_chunks where document_id = ? and run_token is null)',
  ).pluck();
  const first = statement(
    'select min(run_token) from knowledge_chunks where document_id = ?',
  ).pluck();
  const after = statement(
    'select min(run_token) from knowledge_chunks where document_id = ? and run_token > ?',
  ).pluck();
  // A chunk of run `token` is kept while the document's current or running run is that run.
  const kept = (token: string | null, d: (typeof documents)[number]) =>
    token === d.current || (d.running !== null && token === d.running);
  const leftovers = documents
    .filter((d) => {
      if (untokened.get(d.id) === 1 && !kept(null, d)) return true;
      for (
        let t = first.get(d.id) as string | null;
        t !== null;
        t = after.get(d.id, t) as string | null
      ) {
        if (!kept(t, d)) return true;
      }
      return false;
    })
    .map((d) => d.id);
  return { hidden, leftovers };
}

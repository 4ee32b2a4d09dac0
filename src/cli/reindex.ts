/** `aps reindex`: re-index chosen documents with the active embedding model, with progress. */
import type { Command } from 'commander';
import type { AppContext } from '../context.js';
import type { KnowledgeDocument } from '../knowledge/documents/documents.schemas.js';
import { Progress } from './progress.js';
import type { CliSession } from './session.js';

interface Selectors {
  stale?: boolean;
  all?: boolean;
  project?: string;
  document?: string[];
  json?: boolean;
}

/** Printed when no selector is given: re-indexing everything by accident can take hours. */
export const REINDEX_CHOICES = `Say which documents to re-index:
  --stale             those embedded with another model than the active one
  --project <id>      every document of a project (with --stale: only its stale ones)
  --document <id...>  these documents
  --all               every document (except those being indexed right now)
Examples: aps reindex --stale · aps reindex --project p1 --stale · aps reindex --document 7f3… 9a1…`;

export class UsageError extends Error {}

function checkSelectors(opts: Selectors): void {
  const { stale, all, project, document } = opts;
  if (stale !== true && all !== true && project === undefined && document === undefined)
    throw new UsageError(REINDEX_CHOICES);
  if (all === true && (stale === true || project !== undefined || document !== undefined))
    throw new UsageError('--all cannot be combined with another selector');
  if (document !== undefined && (stale === true || project !== undefined))
    throw new UsageError('--document cannot be combined with --stale or --project');
}

async function select(ctx: AppContext, opts: Selectors): Promise<KnowledgeDocument[]> {
  const { documents, embedder } = ctx.knowledge;
  if (opts.document !== undefined) {
    const found: KnowledgeDocument[] = [];
    for (const id of opts.document) found.push(await documents.get(id));
    return found;
  }
  const { items: listed } = await documents.list({
    limit: Number.MAX_SAFE_INTEGER,
    ...(opts.project === undefined ? {} : { projectId: opts.project }),
    ...(opts.stale === true ? { staleFor: embedder.model } : {}),
  });
  return listed.filter((d) => d.status !== 'indexing');
}

export function registerReindex(program: Command, session: CliSession): void {
  program
    .command('reindex')
    .description('Re-index documents with the active embedding model (--stale, --project, …)')
    .option('--stale', 'documents embedded with another model than the active one')
    .option('--project <id>', 'every document of this project (with --stale: its stale ones)')
    .option('--document <id...>', 'these documents')
    .option('--all', 'every document')
    .option('--json', 'print the outcome as JSON')
    .action(async (opts: Selectors) => {
      checkSelectors(opts);
      await session.requireDatabase('nothing to re-index');
      await session.withContext(async (ctx) => {
        await reindex(ctx, session, opts);
      });
    });
}

async function reindex(ctx: AppContext, session: CliSession, opts: Selectors): Promise<void> {
  const { indexing, embedder } = ctx.knowledge;
  const chosen = await select(ctx, opts);
  // A switch of the embedding model under way: the commits also write the vectors of the model
  // that answers searches meanwhile (embeddings/model-switch.ts).
  await ctx.knowledge.models.refresh();
  // Loads (on a machine's very first run, builds) the model before the bar starts.
  if (chosen.length > 0) await embedder.ready();
  const failed: { id: string; name: string; error: string }[] = [];
  let succeeded = 0;
  // The first Ctrl-C finishes the document in progress and stops (nothing left `indexing`);
  // a second one exits at once (the server re-queues that document at its next start).
  const state = { stopping: false };
  const stop = () => {
    if (state.stopping) process.exit(130);
    state.stopping = true;
    session.note('stopping after the current document (Ctrl-C again to abort)');
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  const started = performance.now();
  const progress = new Progress(session.status, chosen.length);
  try {
    for (const doc of chosen) {
      if (state.stopping) break;
      progress.begin(doc.name);
      try {
        await indexing.reindex(doc.id);
        succeeded += 1;
      } catch (error) {
        const message = (error as Error).message;
        failed.push({ id: doc.id, name: doc.name, error: message });
        session.note(`failed ${doc.id} (${doc.name}): ${message}`);
      }
      progress.step();
    }
  } finally {
    progress.end();
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  if (opts.json === true) {
    const outcome = { model: embedder.model, selected: chosen.length, reindexed: succeeded };
    console.log(JSON.stringify({ ...outcome, failed, stopped: state.stopping }));
  } else {
    const what = opts.stale === true ? 'stale documents' : 'documents';
    const verb = opts.stale === true ? 're-embedded' : 're-indexed';
    console.log(
      `${verb} ${succeeded} of ${chosen.length} ${what} with ${embedder.model} in ${seconds} s` +
        (failed.length > 0 ? ` (${failed.length} failed)` : '') +
        (state.stopping ? ' (stopped)' : ''),
    );
  }
  if (failed.length > 0) process.exitCode = 1;
}

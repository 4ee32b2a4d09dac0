/** Starts the HTTP server: context, first-start key, app, listen; and stops it gracefully. */
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { createContext, type AppContext, type ContextOptions } from './context.js';
import { sweepScratch } from './knowledge/storage/scratch.js';

export interface RunningServer {
  app: FastifyInstance;
  ctx: AppContext;
  /** e.g. `http://127.0.0.1:4000` */
  address: string;
  close(): Promise<void>;
}

/** Creates the keys a fresh installation needs. Returns the raw first key when one was made. */
export async function ensureInitialKeys(
  ctx: AppContext,
  log: FastifyInstance['log'],
): Promise<string | null> {
  if (ctx.readOnly) return null;
  if (ctx.config.bootstrapApiKey !== null) {
    const outcome = await ctx.apiKeys.ensureBootstrapKey(ctx.config.bootstrapApiKey);
    log.info(
      { outcome },
      outcome === 'revoked'
        ? 'bootstrap API key is revoked; left revoked'
        : `bootstrap API key ${outcome}`,
    );
  }
  if (ctx.config.nodeEnv === 'production') {
    if ((await ctx.apiKeys.list()).length === 0)
      log.warn('no API key exists: create one with `aps keys create --name admin --level L0`');
    return null;
  }
  const first = await ctx.apiKeys.createFirstKeyIfNone();
  return first?.rawKey ?? null;
}

/** Start-up housekeeping of the knowledge base after a crash or restart. */
export async function recoverKnowledge(ctx: AppContext): Promise<void> {
  await sweepScratch(ctx.knowledge.scratchDir);
  if (ctx.queue.driver === 'memory') await ctx.knowledge.documents.sweepOrphanFiles();
  else {
    // Other instances may be mid-upload: orphans are confirmed after a minute, in the background.
    void ctx.knowledge.documents.sweepOrphanFiles(60_000).catch((error: unknown) => {
      ctx.log.warn({ err: error }, 'sweeping orphan files failed');
    });
  }
  await ctx.knowledge.indexing.recoverInterrupted();
}

/**
 * Loads the in-process search indexes before the server listens: loading blocks (better-sqlite3)
 * and the first query should not pay for it. A failure only delays it to the first search.
 */
async function warmSearch(ctx: AppContext, log: FastifyBaseLogger): Promise<void> {
  const start = performance.now();
  try {
    const chunks = await ctx.knowledge.retrieval.warm();
    if (chunks > 0) {
      log.info({ chunks, ms: Math.round(performance.now() - start) }, 'search indexes loaded');
    }
  } catch (error) {
    log.warn({ err: error }, 'loading the search indexes failed; the first search retries');
  }
}

export async function startServer(
  config: Config,
  options: ContextOptions & { print?: (line: string) => void } = {},
): Promise<RunningServer> {
  const print = options.print ?? ((line: string) => process.stdout.write(line + '\n'));
  const ctx = await createContext(config, options);
  let app: FastifyInstance | undefined;
  try {
    app = await buildApp(ctx);
    if (ctx.readOnly)
      app.log.error(
        { migration: ctx.migration.errorMessage },
        'migration safety check failed: read-only mode',
      );
    const firstKey = await ensureInitialKeys(ctx, app.log);
    if (!ctx.readOnly) await recoverKnowledge(ctx);
    await warmSearch(ctx, app.log);
    // Loads (or on the very first start, builds) the embedding model in the background.
    ctx.knowledge.embedder.ready().catch((error: unknown) => {
      app?.log.error({ err: error }, 'the embedding model could not be loaded');
    });
    await app.listen({ port: config.port, host: config.host });
    const addr = app.server.address();
    const port = typeof addr === 'object' && addr !== null ? addr.port : config.port;
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    const address = `http://${host}:${port}`;
    print(
      `Agent Platform Server listening on ${address} (API ${config.apiPrefix}, docs ${address}/docs)`,
    );
    if (firstKey !== null) {
      print('');
      print('First start: an L0 API key was created. It is shown only this once; keep it safe:');
      print(`  ${firstKey}`);
      print('');
    }
    const running = app;
    return {
      app: running,
      ctx,
      address,
      async close() {
        await running.close();
        await ctx.close();
      },
    };
  } catch (error) {
    await app?.close();
    await ctx.close();
    throw error;
  }
}

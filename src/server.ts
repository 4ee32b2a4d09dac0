/** Starts the HTTP server: context, first-start key, app, listen; and stops it gracefully. */
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { createContext, type AppContext, type ContextOptions } from './context.js';
import { listenMetrics, type MetricsListener } from './metrics/metrics-listener.js';

export interface RunningServer {
  app: FastifyInstance;
  ctx: AppContext;
  /** e.g. `http://127.0.0.1:4000` */
  address: string;
  /** The METRICS_PORT listener's address (`http://127.0.0.1:9464`); null when not configured. */
  metricsAddress: string | null;
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

export async function startServer(
  config: Config,
  options: ContextOptions & { print?: (line: string) => void } = {},
): Promise<RunningServer> {
  const print = options.print ?? ((line: string) => process.stdout.write(line + '\n'));
  const ctx = await createContext(config, options);
  let app: FastifyInstance | undefined;
  let metricsListener: MetricsListener | undefined;
  try {
    app = await buildApp(ctx);
    if (ctx.readOnly)
      app.log.error(
        { migration: ctx.migration.errorMessage },
        'migration safety check failed: read-only mode',
      );
    const firstKey = await ensureInitialKeys(ctx, app.log);
    ctx.audit.startPruning(config.auditRetentionDays);
    // The search indexes load after the server listens (readiness says when they are loaded).
    await ctx.knowledge.start({ recover: !ctx.readOnly, searchInBackground: true });
    await app.listen({ port: config.port, host: config.host });
    const addr = app.server.address();
    const port = typeof addr === 'object' && addr !== null ? addr.port : config.port;
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    const address = `http://${host}:${port}`;
    const { port: metricsPort, host: metricsHost } = config.metrics;
    if (ctx.metrics !== null && metricsPort !== null) {
      metricsListener = await listenMetrics(
        ctx.metrics,
        { port: metricsPort, host: metricsHost },
        app.log,
      );
      app.log.info({ address: metricsListener.address }, 'metrics listener started');
    }
    print(
      `Agent Platform Server listening on ${address} (console ${address}/console/, API ${config.apiPrefix}, docs ${address}/docs)`,
    );
    if (firstKey !== null) {
      print('');
      print('First start: an L0 API key was created. It is shown only this once; keep it safe:');
      print(`  ${firstKey}`);
      print('');
    }
    const running = app;
    const listener = metricsListener;
    return {
      app: running,
      ctx,
      address,
      metricsAddress: listener?.address ?? null,
      async close() {
        await listener?.close();
        await running.close();
        await ctx.close();
      },
    };
  } catch (error) {
    await metricsListener?.close();
    await app?.close();
    await ctx.close();
    throw error;
  }
}

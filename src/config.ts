/**
 * The one validated config object, built once at start-up from the environment (and an optional
 * `.env` file) and passed down; the variables are declared in config.schema.ts. Nothing else in
 * the server reads `process.env`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { parseEnv } from 'node:util';
import type { Static, TSchema } from 'typebox';
import { Value } from 'typebox/value';
import proxyAddr from '@fastify/proxy-addr';
import { ENV_SCHEMA } from './config.schema.js';

type Env = Static<typeof ENV_SCHEMA>;

/** The validated configuration every part of the server receives. */
export interface Config {
  nodeEnv: Env['NODE_ENV'];
  port: number;
  host: string;
  apiPrefix: string;
  /** Absolute path. */
  dataDir: string;
  database:
    | { driver: 'sqlite'; filename: string }
    | {
        driver: 'postgres';
        url: string;
        poolMax: number;
        statementTimeoutMs: number;
        /** How long a query waits for a pooled connection (or a new one to open). */
        connectTimeoutMs: number;
      };
  storage: { driver: 'local' | 'postgres' };
  /** GET /health/ready: its database check's time limit, and how long a result is reused. */
  readiness: { timeoutMs: number; cacheMs: number };
  /** Null: generate and keep one in `dataDir` (refused in production). */
  jwtSecret: string | null;
  jwtTtlSeconds: number;
  /** Longest a chain of refreshed tokens lasts from its key exchange (JWT_MAX_SESSION). */
  jwtMaxSessionSeconds: number;
  /** AUDIT_RETENTION_DAYS. */
  auditRetentionDays: number;
  apiKeySalt: string | null;
  bootstrapApiKey: string | null;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  logFormat: 'auto' | 'pretty' | 'json';
  /** Which finished requests are logged at `info` (the others at `debug`): http/request-log.ts. */
  logRequests: 'notable' | 'all';
  corsOrigins: string[];
  queue: {
    agentRunConcurrency: number;
    toolExecuteConcurrency: number;
    historyLimit: number;
    leaseMs: number;
  };
  authTokenRateLimitPerMinute: number;
  bodyLimitBytes: number;
  /** Timeouts and caps of client connections (`http/connections.ts`). */
  http: {
    headersTimeoutMs: number;
    bodyIdleTimeoutMs: number;
    keepAliveTimeoutMs: number;
    /** 0: no cap. */
    maxConnectionsPerClient: number;
    /** Fastify's `trustProxy` (TRUST_PROXY): false, true, a hop count or proxy addresses. */
    trustProxy: boolean | number | string[];
  };
  /** API requests served at once before 503 OVERLOADED; 0: no limit. */
  maxRequestsInFlight: number;
  /**
   * Prometheus metrics (src/metrics/): `GET /metrics` on the main port with the bearer `token`,
   * and/or on a listener of its own at `host`:`port`. Both null: off.
   */
  metrics: { token: string | null; port: number | null; host: string };
  knowledge: {
    uploadMaxBytes: number;
    indexConcurrency: number;
    converterTimeoutMs: number;
    converterMaxOutputBytes: number;
    /** The bundled converter's input limit (APS_CONVERT_MAX_INPUT_BYTES); null: its default. */
    converterMaxInputBytes: number | null;
    /** Bundled converter worker processes (never more than indexConcurrency). */
    converterWorkers: number;
    /** Jobs after which a pooled converter worker is replaced. */
    converterWorkerMaxJobs: number;
    /** Memory limit of a pooled converter worker, in MiB. */
    converterWorkerMaxMemoryMb: number;
    /** Absolute path, or null for the bundled converter. */
    converterPath: string | null;
    commandsFile: string | null;
    batchMaxFiles: number;
    urlTimeoutMs: number;
    urlAllowPrivate: boolean;
    eventsHeartbeatMs: number;
    eventsMaxStreams: number;
    /** SQLite: quiet time before the search indexes are saved; null: never (-1). */
    searchSnapshotDelayMs: number | null;
    /** SQLite: vectors of a model from which search uses an approximate graph; null: never. */
    searchAnnMinVectors: number | null;
    /** Keyword candidates of a hybrid retrieval (at least topK × 4). */
    hybridCandidates: number;
    /** SQLite: read the database file once after the indexes load (file-preread.ts). */
    sqlitePreread: boolean;
  };
  embedding: {
    provider: Env['EMBEDDING_PROVIDER'];
    model: string | null;
    baseUrl: string;
    apiKey: string | null;
    /** `openai`: the vector length to ask for (EMBEDDING_DIMENSIONS); null: the model's own. */
    dimensions: number | null;
    /** Absolute path (default `./models`). */
    modelDir: string;
    allowDownload: boolean;
    /** Absolute path. */
    cacheDir: string;
    /** Used when `cacheDir` (the per-user default) cannot be written; null when configured. */
    cacheFallbackDir: string | null;
    timeoutMs: number;
    batchSize: number;
    /** `transformers`: run the int8 model (model id `…@q8`). */
    quantized: boolean;
  };
  rerank: {
    provider: Env['RERANK_PROVIDER'];
    model: string;
    baseUrl: string | null;
    apiKey: string | null;
    /** Hits the reranker reorders (at least topK). */
    candidates: number;
    timeoutMs: number;
  };
}

/** Thrown when the environment is invalid; `problems` lists every bad variable. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

const TTL_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

/** Parses `900`, `15m`, `8h`, `1d` into seconds. */
export function parseDuration(text: string): number {
  const match = /^(\d+)([smhd]?)$/.exec(text);
  if (!match) throw new Error(`not a duration: ${text}`);
  return Number(match[1]) * (TTL_UNITS[match[2] || 's'] ?? 1);
}

function describeProblem(name: string, schema: TSchema, value: unknown): string {
  const s = schema as Record<string, unknown>;
  const shown =
    typeof value === 'string' && !/SECRET|SALT|KEY|^METRICS_TOKEN$/.test(name)
      ? ` (got "${value}")`
      : '';
  if (Array.isArray(s.anyOf)) {
    const allowed = (s.anyOf as { const: string }[]).map((o) => o.const).join(', ');
    return `${name} must be one of: ${allowed}${shown}`;
  }
  const rules: string[] = [];
  if (s.type === 'integer') rules.push('an integer');
  if (typeof s.minimum === 'number') rules.push(`≥ ${s.minimum}`);
  if (typeof s.maximum === 'number') rules.push(`≤ ${s.maximum}`);
  if (typeof s.minLength === 'number') rules.push(`at least ${s.minLength} characters`);
  if (typeof s.maxLength === 'number') rules.push(`at most ${s.maxLength} characters`);
  if (typeof s.pattern === 'string') rules.push(`matching ${s.pattern}`);
  return `${name} must be ${rules.join(', ')}${shown}`;
}

/**
 * The per-user cache folder shared by every data directory (the XDG base-directory convention,
 * and the platform's own on macOS and Windows); `otherwise` when no home directory is known.
 */
export function userCacheDir(env: Record<string, string | undefined>, otherwise: string): string {
  const name = 'agent-platform-server';
  const xdg = env.XDG_CACHE_HOME;
  if (xdg !== undefined && isAbsolute(xdg)) return join(xdg, name);
  if (process.platform === 'win32' && env.LOCALAPPDATA !== undefined)
    return join(env.LOCALAPPDATA, name, 'Cache');
  const home = env.HOME ?? homedir();
  if (home === '' || !isAbsolute(home)) return otherwise;
  if (process.platform === 'darwin') return join(home, 'Library', 'Caches', name);
  return join(home, '.cache', name);
}

/** Reads `KEY=value` pairs from `.env` in `cwd`; the real environment wins over the file. */
function readDotEnv(cwd: string): Record<string, string | undefined> {
  const file = resolve(cwd, '.env');
  return existsSync(file) ? parseEnv(readFileSync(file, 'utf8')) : {};
}

/**
 * Validates the environment and builds the config. Throws a ConfigError naming every bad variable.
 * Empty strings count as unset, as most process managers cannot unset a variable.
 */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  cwd: string = process.cwd(),
): Config {
  const merged: Record<string, string | undefined> = { ...readDotEnv(cwd), ...env };
  const raw: Record<string, unknown> = {};
  for (const name of Object.keys(ENV_SCHEMA.properties)) {
    const value = merged[name];
    if (value !== undefined && value.trim() !== '') raw[name] = value.trim();
  }
  const converted = Value.Convert(ENV_SCHEMA, Value.Default(ENV_SCHEMA, raw)) as Record<
    string,
    unknown
  >;

  // Checked one variable at a time so that every bad one is reported (TypeBox caps its error list).
  const problems = new Map<string, string>();
  for (const [name, schema] of Object.entries(ENV_SCHEMA.properties as Record<string, TSchema>)) {
    const value = converted[name];
    if (value !== undefined && Value.Errors(schema, value).length > 0) {
      problems.set(name, describeProblem(name, schema, raw[name]));
    }
  }
  const e = converted as Env;

  let database: Config['database'] | null = null;
  const url = e.DATABASE_URL;
  if (url === undefined) {
    database = { driver: 'sqlite', filename: resolve(cwd, e.DATA_DIR, 'aps.sqlite') };
  } else if (url.startsWith('sqlite:')) {
    const file = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (file === '') problems.set('DATABASE_URL', 'DATABASE_URL sqlite: needs a file path');
    else database = { driver: 'sqlite', filename: resolve(cwd, file) };
  } else if (/^postgres(ql)?:\/\//.test(url)) {
    database = {
      driver: 'postgres',
      url,
      poolMax: e.DATABASE_POOL_MAX,
      statementTimeoutMs: e.DATABASE_STATEMENT_TIMEOUT_MS,
      connectTimeoutMs: e.DATABASE_CONNECT_TIMEOUT_MS,
    };
  } else {
    problems.set('DATABASE_URL', 'DATABASE_URL must be unset, sqlite:<path> or postgres://…');
  }

  if (e.STORAGE_DRIVER === 'postgres' && database?.driver !== 'postgres') {
    problems.set('STORAGE_DRIVER', 'STORAGE_DRIVER=postgres needs a postgres:// DATABASE_URL');
  }

  if (e.NODE_ENV === 'production') {
    if (e.JWT_SECRET === undefined && !problems.has('JWT_SECRET'))
      problems.set('JWT_SECRET', 'JWT_SECRET is required when NODE_ENV=production');
    if (e.API_KEY_SALT === undefined && !problems.has('API_KEY_SALT'))
      problems.set('API_KEY_SALT', 'API_KEY_SALT is required when NODE_ENV=production');
  }

  if (e.EMBEDDING_PROVIDER === 'openai' && e.EMBEDDING_MODEL === undefined) {
    problems.set('EMBEDDING_MODEL', 'EMBEDDING_MODEL is required when EMBEDDING_PROVIDER=openai');
  }
  if (e.RERANK_PROVIDER === 'http' && e.RERANK_BASE_URL === undefined) {
    problems.set('RERANK_BASE_URL', 'RERANK_BASE_URL is required when RERANK_PROVIDER=http');
  }

  const trustProxy = parseTrustProxy(e.TRUST_PROXY);
  if (typeof trustProxy === 'string') problems.set('TRUST_PROXY', trustProxy);

  if (problems.size > 0 || database === null || typeof trustProxy === 'string') {
    throw new ConfigError([...problems.values()]);
  }

  return {
    nodeEnv: e.NODE_ENV,
    port: e.PORT,
    host: e.HOST,
    apiPrefix: e.API_PREFIX,
    dataDir: resolve(cwd, e.DATA_DIR),
    database,
    storage: { driver: e.STORAGE_DRIVER },
    readiness: { timeoutMs: e.READY_CHECK_TIMEOUT_MS, cacheMs: e.READY_CHECK_CACHE_MS },
    jwtSecret: e.JWT_SECRET ?? null,
    jwtTtlSeconds: parseDuration(e.JWT_TTL),
    jwtMaxSessionSeconds: parseDuration(e.JWT_MAX_SESSION),
    auditRetentionDays: e.AUDIT_RETENTION_DAYS,
    apiKeySalt: e.API_KEY_SALT ?? null,
    bootstrapApiKey: e.BOOTSTRAP_API_KEY ?? null,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    logRequests: e.LOG_REQUESTS,
    corsOrigins: e.CORS_ORIGINS.split(',')
      .map((o) => o.trim())
      .filter((o) => o !== ''),
    queue: {
      agentRunConcurrency: e.QUEUE_AGENT_RUN_CONCURRENCY,
      toolExecuteConcurrency: e.QUEUE_TOOL_EXECUTE_CONCURRENCY,
      historyLimit: e.QUEUE_HISTORY_LIMIT,
      leaseMs: e.QUEUE_LEASE_MS,
    },
    authTokenRateLimitPerMinute: e.AUTH_TOKEN_RATE_LIMIT,
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    http: {
      headersTimeoutMs: e.HTTP_HEADERS_TIMEOUT_MS,
      bodyIdleTimeoutMs: e.HTTP_BODY_IDLE_TIMEOUT_MS,
      keepAliveTimeoutMs: e.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      maxConnectionsPerClient: e.MAX_CONNECTIONS_PER_CLIENT,
      trustProxy,
    },
    maxRequestsInFlight: e.MAX_REQUESTS_IN_FLIGHT,
    metrics: {
      token: e.METRICS_TOKEN ?? null,
      port: e.METRICS_PORT ?? null,
      host: e.METRICS_HOST,
    },
    knowledge: {
      uploadMaxBytes: e.UPLOAD_MAX_BYTES,
      indexConcurrency: e.QUEUE_KNOWLEDGE_INDEX_CONCURRENCY,
      converterTimeoutMs: e.CONVERTER_TIMEOUT_MS,
      converterMaxOutputBytes: e.CONVERTER_MAX_OUTPUT_BYTES,
      converterMaxInputBytes: e.APS_CONVERT_MAX_INPUT_BYTES ?? null,
      converterWorkers: Math.min(e.CONVERTER_WORKERS, e.QUEUE_KNOWLEDGE_INDEX_CONCURRENCY),
      converterWorkerMaxJobs: e.CONVERTER_WORKER_MAX_JOBS,
      converterWorkerMaxMemoryMb: e.CONVERTER_WORKER_MAX_MEMORY_MB,
      converterPath:
        e.KNOWLEDGE_CONVERTER_PATH === undefined ? null : resolve(cwd, e.KNOWLEDGE_CONVERTER_PATH),
      commandsFile:
        e.KNOWLEDGE_COMMANDS_FILE === undefined ? null : resolve(cwd, e.KNOWLEDGE_COMMANDS_FILE),
      batchMaxFiles: e.KNOWLEDGE_BATCH_MAX_FILES,
      urlTimeoutMs: e.KNOWLEDGE_URL_TIMEOUT_MS,
      urlAllowPrivate: e.KNOWLEDGE_URL_ALLOW_PRIVATE === 'true',
      eventsHeartbeatMs: e.KNOWLEDGE_EVENTS_HEARTBEAT_MS,
      eventsMaxStreams: e.KNOWLEDGE_EVENTS_MAX_STREAMS,
      searchSnapshotDelayMs: e.SEARCH_SNAPSHOT_DELAY_MS < 0 ? null : e.SEARCH_SNAPSHOT_DELAY_MS,
      searchAnnMinVectors: e.SEARCH_ANN_MIN_VECTORS < 0 ? null : e.SEARCH_ANN_MIN_VECTORS,
      hybridCandidates: e.SEARCH_HYBRID_CANDIDATES,
      sqlitePreread: e.SQLITE_PREREAD === 'true',
    },
    embedding: {
      provider: e.EMBEDDING_PROVIDER,
      model:
        e.EMBEDDING_MODEL ??
        (e.EMBEDDING_PROVIDER === 'transformers' ? 'Xenova/bge-small-en-v1.5' : null),
      baseUrl: e.EMBEDDING_BASE_URL.replace(/\/+$/, ''),
      apiKey: e.EMBEDDING_API_KEY ?? null,
      dimensions: e.EMBEDDING_DIMENSIONS ?? null,
      modelDir: resolve(cwd, e.EMBEDDING_MODEL_DIR ?? 'models'),
      allowDownload: e.EMBEDDING_ALLOW_DOWNLOAD === 'true',
      cacheDir:
        e.EMBEDDING_CACHE_DIR === undefined
          ? userCacheDir(merged, join(resolve(cwd, e.DATA_DIR), 'models'))
          : resolve(cwd, e.EMBEDDING_CACHE_DIR),
      cacheFallbackDir:
        e.EMBEDDING_CACHE_DIR === undefined ? resolve(cwd, e.DATA_DIR, 'models') : null,
      timeoutMs: e.EMBEDDING_TIMEOUT_MS,
      batchSize: e.EMBEDDING_BATCH_SIZE,
      quantized: e.EMBEDDING_QUANTIZED === 'true',
    },
    rerank: {
      provider: e.RERANK_PROVIDER,
      model: e.RERANK_MODEL ?? 'ms-marco-MiniLM-L-12-v2',
      baseUrl: e.RERANK_BASE_URL === undefined ? null : e.RERANK_BASE_URL.replace(/\/+$/, ''),
      apiKey: e.RERANK_API_KEY ?? null,
      candidates: e.RERANK_CANDIDATES,
      timeoutMs: e.RERANK_TIMEOUT_MS,
    },
  };
}

/**
 * TRUST_PROXY as Fastify's `trustProxy`: unset or `false` → false, `true`, a hop count, or a list
 * of proxy addresses (checked by @fastify/proxy-addr, which Fastify uses); a string: the problem.
 */
export function parseTrustProxy(value: string | undefined): boolean | number | string[] | string {
  const text = value?.trim() ?? '';
  if (text === '' || text === 'false') return false;
  if (text === 'true') return true;
  if (/^[0-9]+$/.test(text)) return Number(text);
  const list = text
    .split(',')
    .map((a) => a.trim())
    .filter((a) => a !== '');
  try {
    proxyAddr.compile(list);
  } catch (error) {
    return `TRUST_PROXY: ${(error as Error).message} (give true, a hop count, or addresses/CIDRs)`;
  }
  return list;
}

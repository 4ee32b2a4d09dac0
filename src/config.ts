/**
 * The one validated config object, built once at start-up from the environment (and an optional
 * `.env` file) and passed down. Nothing else in the code base reads `process.env`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { Type, type Static, type TSchema } from 'typebox';
import { Value } from 'typebox/value';

const cores = availableParallelism();

const oneOf = <const T extends readonly string[]>(values: T, def: T[number], description: string) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    { default: def, description },
  );

/** Every variable the server reads, with its default and meaning; the README table is built from it. */
export const ENV_SCHEMA = Type.Object({
  NODE_ENV: oneOf(
    ['development', 'production', 'test'] as const,
    'development',
    '`production` refuses to start without explicit secrets.',
  ),
  PORT: Type.Integer({
    minimum: 0,
    maximum: 65535,
    default: 4000,
    description: 'TCP port; `0` picks a free port and prints the chosen address.',
  }),
  HOST: Type.String({ minLength: 1, default: '127.0.0.1', description: 'Interface to listen on.' }),
  API_PREFIX: Type.String({
    pattern: '^(/[A-Za-z0-9._~-]+)+$',
    default: '/api/v1',
    description: 'Prefix of every API route except `/health` and `/docs`.',
  }),
  DATA_DIR: Type.String({
    minLength: 1,
    default: './data',
    description: 'Where the SQLite database, generated secrets and stored files live.',
  }),
  DATABASE_URL: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        'Unset: SQLite file `aps.sqlite` in `DATA_DIR`. `sqlite:<path>` for another file. `postgres://user:pass@host:port/db` for PostgreSQL (with pgvector): several instances can share it.',
    }),
  ),
  DATABASE_POOL_MAX: Type.Integer({
    minimum: 1,
    maximum: 1000,
    default: 10,
    description: 'PostgreSQL: connections per instance.',
  }),
  DATABASE_STATEMENT_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    maximum: 3_600_000,
    default: 30_000,
    description: 'PostgreSQL: a statement running longer is cancelled (error 503).',
  }),
  STORAGE_DRIVER: Type.Union([Type.Literal('local'), Type.Literal('postgres')], {
    default: 'local',
    description:
      'Where uploaded files and converted markdown live: `local` (under `DATA_DIR`, may be a shared volume) or `postgres` (in the database, so instances need no shared disk; needs a PostgreSQL `DATABASE_URL`).',
  }),
  JWT_SECRET: Type.Optional(
    Type.String({
      minLength: 32,
      description: 'HS256 signing secret (≥ 32 chars). Unset outside production: generated once.',
    }),
  ),
  JWT_TTL: Type.String({
    pattern: '^[0-9]+[smhd]?$',
    default: '15m',
    description: 'Lifetime of issued JWTs: seconds, or a number with s/m/h/d.',
  }),
  API_KEY_SALT: Type.Optional(
    Type.String({
      minLength: 16,
      description:
        'Key of the HMAC that API keys are stored under (≥ 16 chars). Generated if unset.',
    }),
  ),
  BOOTSTRAP_API_KEY: Type.Optional(
    Type.String({
      minLength: 24,
      maxLength: 256,
      pattern: '^[A-Za-z0-9._~+/=-]+$',
      description: 'An L0 key with exactly this raw value is ensured at start-up (unless revoked).',
    }),
  ),
  LOG_LEVEL: oneOf(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const,
    'info',
    'Pino log level.',
  ),
  CORS_ORIGINS: Type.String({
    default: '',
    description: 'Comma-separated allowed browser origins; empty disables CORS; `*` allows any.',
  }),
  QUEUE_AGENT_RUN_CONCURRENCY: Type.Integer({
    minimum: 1,
    maximum: 256,
    default: Math.max(2, Math.floor(cores / 2)),
    description: 'Parallel agent-run jobs (default max(2, cores/2)).',
  }),
  QUEUE_TOOL_EXECUTE_CONCURRENCY: Type.Integer({
    minimum: 1,
    maximum: 256,
    default: Math.max(4, cores),
    description: 'Parallel tool-execution jobs (default max(4, cores)).',
  }),
  QUEUE_HISTORY_LIMIT: Type.Integer({
    minimum: 0,
    maximum: 100_000,
    default: 1000,
    description: 'Finished jobs kept in memory per queue lane for inspection.',
  }),
  QUEUE_LEASE_MS: Type.Integer({
    minimum: 1000,
    maximum: 3_600_000,
    default: 30_000,
    description:
      'PostgreSQL queue: a running job whose instance stops renewing it for this long is run again by another instance.',
  }),
  AUTH_TOKEN_RATE_LIMIT: Type.Integer({
    minimum: 1,
    maximum: 100_000,
    default: 30,
    description: 'Requests per minute per client address on `POST /auth/token`.',
  }),
  UPLOAD_MAX_BYTES: Type.Integer({
    minimum: 1,
    maximum: 10 * 1024 * 1024 * 1024,
    default: 100 * 1024 * 1024,
    description: 'Largest accepted upload (413 above it).',
  }),
  QUEUE_KNOWLEDGE_INDEX_CONCURRENCY: Type.Integer({
    minimum: 1,
    maximum: 64,
    default: Math.max(1, Math.floor(cores / 2)),
    description: 'Parallel indexing jobs (default max(1, cores/2)).',
  }),
  CONVERTER_TIMEOUT_MS: Type.Integer({
    minimum: 1000,
    maximum: 24 * 3600 * 1000,
    default: 300_000,
    description: 'A converter run longer than this is killed (with its whole process tree).',
  }),
  CONVERTER_MAX_OUTPUT_BYTES: Type.Integer({
    minimum: 1024,
    maximum: 4 * 1024 * 1024 * 1024,
    default: 64 * 1024 * 1024,
    description: 'Largest markdown (and stdout/stderr) a converter may produce.',
  }),
  KNOWLEDGE_CONVERTER_PATH: Type.Optional(
    Type.String({
      minLength: 1,
      description: 'Converter binary to run instead of the bundled `aps-convert`.',
    }),
  ),
  KNOWLEDGE_COMMANDS_FILE: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        'JSON file of extra converter commands (argv templates with {input}/{outputDir}).',
    }),
  ),
  EMBEDDING_PROVIDER: oneOf(
    ['static', 'openai', 'transformers'] as const,
    'static',
    '`static`: offline word vectors (default); `openai`: any OpenAI-compatible endpoint; `transformers`: in-process ONNX models.',
  ),
  EMBEDDING_MODEL: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        'Model name for `openai`/`transformers` (e.g. `text-embedding-3-small`, `Xenova/bge-small-en-v1.5`).',
    }),
  ),
  EMBEDDING_BASE_URL: Type.String({
    pattern: '^https?://',
    default: 'https://api.openai.com/v1',
    description: 'Base URL of the OpenAI-compatible embeddings API.',
  }),
  EMBEDDING_API_KEY: Type.Optional(
    Type.String({ minLength: 1, description: 'Bearer key for the embeddings API.' }),
  ),
  EMBEDDING_MODEL_DIR: Type.Optional(
    Type.String({
      minLength: 1,
      description: 'Directory of offline transformer models (`<dir>/<model>/…`).',
    }),
  ),
  EMBEDDING_ALLOW_DOWNLOAD: oneOf(
    ['true', 'false'] as const,
    'false',
    'Let `transformers` download a missing model on first use (needs the internet).',
  ),
  EMBEDDING_CACHE_DIR: Type.Optional(
    Type.String({
      minLength: 1,
      description: 'Where the static model’s binary cache is kept (default `DATA_DIR/models`).',
    }),
  ),
  EMBEDDING_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    maximum: 600_000,
    default: 30_000,
    description: 'Timeout of one embeddings API request.',
  }),
  EMBEDDING_BATCH_SIZE: Type.Integer({
    minimum: 1,
    maximum: 2048,
    default: 64,
    description: 'Texts per embeddings API request.',
  }),
  BODY_LIMIT_BYTES: Type.Integer({
    minimum: 1024,
    maximum: 100 * 1024 * 1024,
    default: 1024 * 1024,
    description: 'Maximum size of a JSON request body.',
  }),
});

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
    | { driver: 'postgres'; url: string; poolMax: number; statementTimeoutMs: number };
  storage: { driver: 'local' | 'postgres' };
  /** Null: generate and keep one in `dataDir` (refused in production). */
  jwtSecret: string | null;
  jwtTtlSeconds: number;
  apiKeySalt: string | null;
  bootstrapApiKey: string | null;
  logLevel: Env['LOG_LEVEL'];
  corsOrigins: string[];
  queue: {
    agentRunConcurrency: number;
    toolExecuteConcurrency: number;
    historyLimit: number;
    leaseMs: number;
  };
  authTokenRateLimitPerMinute: number;
  bodyLimitBytes: number;
  knowledge: {
    uploadMaxBytes: number;
    indexConcurrency: number;
    converterTimeoutMs: number;
    converterMaxOutputBytes: number;
    /** Absolute path, or null for the bundled converter. */
    converterPath: string | null;
    commandsFile: string | null;
  };
  embedding: {
    provider: Env['EMBEDDING_PROVIDER'];
    model: string | null;
    baseUrl: string;
    apiKey: string | null;
    modelDir: string | null;
    allowDownload: boolean;
    /** Absolute path. */
    cacheDir: string;
    timeoutMs: number;
    batchSize: number;
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
    typeof value === 'string' && !/SECRET|SALT|KEY/.test(name) ? ` (got "${value}")` : '';
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

  if (problems.size > 0 || database === null) throw new ConfigError([...problems.values()]);

  return {
    nodeEnv: e.NODE_ENV,
    port: e.PORT,
    host: e.HOST,
    apiPrefix: e.API_PREFIX,
    dataDir: resolve(cwd, e.DATA_DIR),
    database,
    storage: { driver: e.STORAGE_DRIVER },
    jwtSecret: e.JWT_SECRET ?? null,
    jwtTtlSeconds: parseDuration(e.JWT_TTL),
    apiKeySalt: e.API_KEY_SALT ?? null,
    bootstrapApiKey: e.BOOTSTRAP_API_KEY ?? null,
    logLevel: e.LOG_LEVEL,
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
    knowledge: {
      uploadMaxBytes: e.UPLOAD_MAX_BYTES,
      indexConcurrency: e.QUEUE_KNOWLEDGE_INDEX_CONCURRENCY,
      converterTimeoutMs: e.CONVERTER_TIMEOUT_MS,
      converterMaxOutputBytes: e.CONVERTER_MAX_OUTPUT_BYTES,
      converterPath:
        e.KNOWLEDGE_CONVERTER_PATH === undefined ? null : resolve(cwd, e.KNOWLEDGE_CONVERTER_PATH),
      commandsFile:
        e.KNOWLEDGE_COMMANDS_FILE === undefined ? null : resolve(cwd, e.KNOWLEDGE_COMMANDS_FILE),
    },
    embedding: {
      provider: e.EMBEDDING_PROVIDER,
      model:
        e.EMBEDDING_MODEL ??
        (e.EMBEDDING_PROVIDER === 'transformers' ? 'Xenova/bge-small-en-v1.5' : null),
      baseUrl: e.EMBEDDING_BASE_URL.replace(/\/+$/, ''),
      apiKey: e.EMBEDDING_API_KEY ?? null,
      modelDir: e.EMBEDDING_MODEL_DIR === undefined ? null : resolve(cwd, e.EMBEDDING_MODEL_DIR),
      allowDownload: e.EMBEDDING_ALLOW_DOWNLOAD === 'true',
      cacheDir: resolve(cwd, e.EMBEDDING_CACHE_DIR ?? join(e.DATA_DIR, 'models')),
      timeoutMs: e.EMBEDDING_TIMEOUT_MS,
      batchSize: e.EMBEDDING_BATCH_SIZE,
    },
  };
}

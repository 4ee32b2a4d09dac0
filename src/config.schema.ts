/**
 * Every environment variable the server reads, with its type, bounds, default and meaning
 * (TypeBox): config.ts validates the environment against it and builds the Config object.
 */
import { availableParallelism } from 'node:os';
import { Type } from 'typebox';

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
  DATABASE_CONNECT_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    maximum: 600_000,
    default: 5000,
    description:
      'PostgreSQL: how long a request waits for a pooled connection, or for a new one to open, before it answers 503 `DATABASE_UNAVAILABLE` (so requests never queue without end while the database is away or every connection is busy).',
  }),
  READY_CHECK_TIMEOUT_MS: Type.Integer({
    minimum: 50,
    maximum: 60_000,
    default: 1000,
    description:
      '`GET /health/ready`: how long its database check may take before the instance counts as not ready.',
  }),
  READY_CHECK_CACHE_MS: Type.Integer({
    minimum: 0,
    maximum: 60_000,
    default: 1000,
    description:
      '`GET /health/ready`: how long a database check answers for, so frequent load-balancer polls do not each reach the database (0: check on every poll).',
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
  JWT_MAX_SESSION: Type.String({
    pattern: '^[0-9]+[smhd]?$',
    default: '12h',
    description:
      'Longest a session of refreshed JWTs lasts from the API key exchange (`auth_time`); a refresh past it answers 401.',
  }),
  AUDIT_RETENTION_DAYS: Type.Integer({
    minimum: 1,
    maximum: 36_500,
    default: 365,
    description: 'Days an audit entry is kept; older ones are pruned in the background.',
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
  METRICS_TOKEN: Type.Optional(
    Type.String({
      minLength: 32,
      maxLength: 512,
      pattern: '^[\\x21-\\x7E]+$',
      description:
        'Serves Prometheus metrics at `GET /metrics` on the main port to `Authorization: Bearer <METRICS_TOKEN>` (≥ 32 printable characters, no spaces; compared in constant time; anything else: 401). Unset (and no METRICS_PORT): no metrics, `/metrics` is 404.',
    }),
  ),
  METRICS_PORT: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: 65535,
      description:
        'Serves Prometheus metrics at `GET /metrics` on a separate listener of this port, without a token (`0` picks a free port). Bound to METRICS_HOST.',
    }),
  ),
  METRICS_HOST: Type.String({
    minLength: 1,
    default: '127.0.0.1',
    description:
      'Interface of the METRICS_PORT listener (loopback by default: only this machine, or a sidecar, can scrape it).',
  }),
  LOG_LEVEL: oneOf(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const,
    'info',
    'Pino log level.',
  ),
  LOG_FORMAT: oneOf(
    ['auto', 'pretty', 'json'] as const,
    'auto',
    '`auto`: one readable line per entry when the output is a terminal, JSON lines otherwise; `pretty` or `json` force one. Credentials are redacted in both.',
  ),
  LOG_REQUESTS: oneOf(
    ['notable', 'all'] as const,
    'notable',
    '`notable`: the line of a request that changes state (any method but GET, HEAD and OPTIONS), fails (status ≥ 400) or takes 1 s or more is written at `info`, the line of a quick successful read at `debug`; `all`: every request line at `info`.',
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
    default: Math.max(4, cores),
    description:
      'Indexing runs in flight (default max(4, cores)). A run waits on the converter, the embedder and the database in turn, so more runs than converter workers keep each of them busy.',
  }),
  CONVERTER_WORKERS: Type.Integer({
    minimum: 1,
    maximum: 64,
    default: Math.max(1, Math.floor(cores / 2)),
    description:
      'Processes of the bundled converter (default max(1, cores/2), at most QUEUE_KNOWLEDGE_INDEX_CONCURRENCY); a run waits for a free one.',
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
  APS_CONVERT_MAX_INPUT_BYTES: Type.Optional(
    Type.Integer({
      minimum: 1,
      description:
        "The bundled converter's limit on an input file (default 200 MiB; larger files fail as too large). Its processes inherit it from the server's environment; the server applies it to the small texts it converts in its own process too.",
    }),
  ),
  CONVERTER_WORKER_MAX_JOBS: Type.Integer({
    minimum: 1,
    maximum: 1_000_000,
    default: 500,
    description: 'A pooled converter worker is replaced after this many jobs.',
  }),
  CONVERTER_WORKER_MAX_MEMORY_MB: Type.Integer({
    minimum: 128,
    maximum: 65_536,
    default: 2048,
    description:
      'Memory limit of a pooled converter worker (heap and resident size); above it the worker is killed.',
  }),
  KNOWLEDGE_EVENTS_HEARTBEAT_MS: Type.Integer({
    minimum: 100,
    maximum: 3_600_000,
    default: 15_000,
    description:
      'A comment line is sent on every open events stream this often (keeps proxies from closing it).',
  }),
  KNOWLEDGE_EVENTS_MAX_STREAMS: Type.Integer({
    minimum: 1,
    maximum: 100_000,
    default: 1000,
    description: 'Open events streams per instance; one more is answered 503 `OVERLOADED`.',
  }),
  SEARCH_SNAPSHOT_DELAY_MS: Type.Integer({
    minimum: -1,
    maximum: 86_400_000,
    default: 30_000,
    description:
      'SQLite: the in-process search indexes are saved to `search-snapshots/` beside the database this long after they changed, so a restart reads them instead of rebuilding them; -1: never.',
  }),
  SEARCH_ANN_MIN_VECTORS: Type.Integer({
    minimum: -1,
    maximum: 1_000_000_000,
    default: 500_000,
    description:
      "SQLite: from this many vectors of a model on, vector search takes its candidates from an approximate HNSW graph (usearch; 16 links, a search list of 2560, candidates re-scored exactly) instead of a full scan of its int8 rows; -1: never. At 1M rows of the default model the graph answers in about half the scan's time with recall@10 0.99 (at 500k with a list of 2048: 12 ms against the scan's 15, 0.994); it takes 250–370 bytes a row, built in a worker thread after the indexes load and saved beside their snapshots.",
  }),
  SQLITE_PREREAD: oneOf(
    ['true', 'false'] as const,
    'true',
    "SQLite: once the search indexes have loaded, the database file is read once in the background, so that searches find the rows and vectors they read in the operating system's page cache instead of on disk (skipped when the file is larger than half the available memory).",
  ),
  SEARCH_HYBRID_CANDIDATES: Type.Integer({
    minimum: 10,
    maximum: 1000,
    default: 40,
    description:
      'How deep a hybrid retrieval looks on each side (at least topK × 4): the best keyword matches, and the nearest chunks, which are scored by their keywords too (a nearest chunk holding a query word is fused with its BM25). Deeper comes closer to the fusion of every chunk and costs time on a large collection (1M chunks, topK 10: 40 shares 96 % of the places of that ideal top 10, 100 shares 99 % and is 17 % slower; docs/performance.md).',
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
  KNOWLEDGE_BATCH_MAX_FILES: Type.Integer({
    minimum: 1,
    maximum: 10_000,
    default: 100,
    description: '`POST …/knowledge/documents/batch`: most file parts per request (413 above it).',
  }),
  KNOWLEDGE_URL_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    maximum: 3_600_000,
    default: 30_000,
    description:
      '`POST …/knowledge/documents/url`: the whole fetch (redirects and body) must finish within this (502 otherwise).',
  }),
  KNOWLEDGE_URL_ALLOW_PRIVATE: oneOf(
    ['true', 'false'] as const,
    'false',
    '`true`: URL ingest may fetch private, loopback, link-local and other non-public addresses (refused with 403 otherwise).',
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
        'Model name for `openai`/`transformers` (e.g. `text-embedding-3-small`; `bge-small-en-v1.5`, `all-MiniLM-L6-v2`, `e5-small-v2`, `multilingual-e5-small` or a directory name under EMBEDDING_MODEL_DIR).',
    }),
  ),
  EMBEDDING_BASE_URL: Type.String({
    pattern: '^https?://',
    default: 'https://api.openai.com/v1',
    description: 'Base URL of the OpenAI-compatible embeddings API.',
  }),
  EMBEDDING_DIMENSIONS: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 65_536,
      description:
        '`openai`: the vector length to ask for (`dimensions`, for models that can shorten theirs); a server that answers another length fails the request. The model counts as another one (`…@N`).',
    }),
  ),
  EMBEDDING_API_KEY: Type.Optional(
    Type.String({ minLength: 1, description: 'Bearer key for the embeddings API.' }),
  ),
  EMBEDDING_MODEL_DIR: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        'Directory of offline transformer models (`<dir>/<model>/…`), where `aps models pull` and `npm run models:install` put them. Default: `./models`.',
    }),
  ),
  EMBEDDING_QUANTIZED: oneOf(
    ['true', 'false'] as const,
    'false',
    '`transformers`: run the int8 model (`onnx/model_quantized.onnx`): about twice as fast on a CPU, its vectors close to the full model’s but not equal, so it counts as another model (`…@q8`: documents are re-indexed).',
  ),
  EMBEDDING_ALLOW_DOWNLOAD: oneOf(
    ['true', 'false'] as const,
    'false',
    'Let `transformers` download a missing model on first use (needs the internet).',
  ),
  EMBEDDING_CACHE_DIR: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        'Where the static model’s binary cache (~17 MB, built once in ~15 s) is kept. Default: one per user, shared by every data directory: `$XDG_CACHE_HOME/agent-platform-server` (else `~/.cache/…`; `~/Library/Caches/…` on macOS, `%LOCALAPPDATA%\\…` on Windows), or `DATA_DIR/models` when that is not writable.',
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
  RERANK_PROVIDER: oneOf(
    ['none', 'transformers', 'http'] as const,
    'none',
    'A second opinion on the best hits: `transformers` runs a cross-encoder in process (RERANK_MODEL under EMBEDDING_MODEL_DIR); `http` calls a rerank API (`POST {RERANK_BASE_URL}/rerank`, the shape TEI, Jina and Cohere share); `none` keeps the fused order.',
  ),
  RERANK_MODEL: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        'The reranking model (`transformers` default: `ms-marco-MiniLM-L-12-v2`; `http`: sent as `model`).',
    }),
  ),
  RERANK_BASE_URL: Type.Optional(
    Type.String({ pattern: '^https?://', description: 'Base URL of the rerank API (`http`).' }),
  ),
  RERANK_API_KEY: Type.Optional(
    Type.String({ minLength: 1, description: 'Bearer key for the rerank API.' }),
  ),
  RERANK_CANDIDATES: Type.Integer({
    minimum: 2,
    maximum: 200,
    default: 30,
    description: 'How many of the best hits the reranker reorders (at least topK are asked for).',
  }),
  RERANK_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    maximum: 600_000,
    default: 10_000,
    description: 'A rerank slower than this is given up: the hits keep their fused order.',
  }),
  HTTP_HEADERS_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    maximum: 600_000,
    default: 30_000,
    description:
      'A client must send the request line and headers within this time, or gets 408 and is disconnected.',
  }),
  HTTP_BODY_IDLE_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    maximum: 3_600_000,
    default: 30_000,
    description:
      'A request body that receives no byte for this long is dropped (408). Inactivity, not total time: slow uploads of any size still work.',
  }),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    maximum: 3_600_000,
    default: 72_000,
    description:
      'An idle keep-alive connection is closed after this long (above the 60 s idle timeout of common load balancers).',
  }),
  MAX_CONNECTIONS_PER_CLIENT: Type.Integer({
    minimum: 0,
    maximum: 1_000_000,
    default: 64,
    description:
      'Open connections one client address may hold; more are answered 429 and closed. `0`: no cap. Behind a reverse proxy set TRUST_PROXY instead: its connections are then not capped.',
  }),
  TRUST_PROXY: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 2000,
      description:
        'Behind a reverse proxy: `true` (trust every hop), a hop count, or addresses/CIDRs/`loopback`/`linklocal`/`uniquelocal` (comma-separated) of the proxies. The client address then comes from `X-Forwarded-For` (logs, rate limits, audit), and connections from trusted proxies are not capped per address. Unset: the socket address.',
    }),
  ),
  MAX_REQUESTS_IN_FLIGHT: Type.Integer({
    minimum: 0,
    maximum: 100_000,
    default: 64 * cores,
    description:
      'API requests served at once; beyond it a request is answered 503 `OVERLOADED` with `Retry-After` (`/health*` and `/docs` are never refused). `0`: no limit. Default 64 × cores.',
  }),
  BODY_LIMIT_BYTES: Type.Integer({
    minimum: 1024,
    maximum: 100 * 1024 * 1024,
    default: 1024 * 1024,
    description: 'Maximum size of a JSON request body.',
  }),
});

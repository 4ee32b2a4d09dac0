/**
 * infinity-emb's rerank server (`POST /rerank`, the Cohere/Jina shape) serving the installed
 * ms-marco-MiniLM-L-12-v2 cross-encoder: the real server the `http` reranker's model suite runs
 * against (test/models/rerank-http.test.ts).
 *
 * `ensureInfinityServer(cacheDir)` creates, once, a Python virtual environment under
 * `<cacheDir>/infinity-venv` with `infinity-emb[server,optimum]==0.0.78` and the set it was
 * measured with (infinity-requirements.txt). It is large: about 5.8 GB, because the package
 * index's default torch wheel brings the CUDA libraries, used or not. It is kept per user and
 * reused by every later run (a marker written last says it is complete).
 *
 * The model is prepared as infinity needs it, from the installed folder (`models/<name>/`), under
 * `<cacheDir>/infinity-models/<name>/` (made again when the source's ONNX file changes). Two
 * workarounds, found when it was first tried (the research notes of issue 40):
 * - a flat folder (config, tokenizer and `model.onnx` at the top), served with `--model-id .`
 *   from inside it: infinity's optimum engine looks for the ONNX file beside config.json and
 *   treats any other model id as a hub repository;
 * - the graph rewritten to compute token_type_ids from input_ids (infinity_tti_graph.py): the
 *   engine feeds only input_ids and attention_mask, and zeros for the types shift every logit.
 * With both, its scores equal the reference pipeline's (same batch, same order).
 *
 * `startInfinityServer({modelSource})` runs it on a free loopback port in its own process group,
 * offline (HF_HUB_OFFLINE=1) and without telemetry (DO_NOT_TRACK=1), and resolves once `/health`
 * answers. `tsx scripts/models/infinity.ts [--check]` prepares it (and, with --check, starts it).
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  createReadStream,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { copyFile, rename } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { freePort, startServerProcess } from './server-process.js';
import { sourcesDir } from './sources.js';

export const INFINITY_VERSION = '0.0.78';
/** The reranker infinity serves in the tests, and the name it answers to (`model`). */
export const INFINITY_MODEL = 'ms-marco-MiniLM-L-12-v2';

const HERE = import.meta.dirname;
const REQUIREMENTS = join(HERE, 'infinity-requirements.txt');
/** Written last into a complete venv / prepared model folder. */
const MARKER = 'aps-infinity.json';
/** The installed models (`npm run models:install`), unless APS_MODELS_DIR says otherwise. */
const MODELS_DIR = resolve(process.env.APS_MODELS_DIR ?? join(HERE, '../../models'));

export interface InfinityInstall {
  python: string;
  /** The server's command, before its options. */
  serveCommand: string[];
  /** The prepared model folder; null when the model is not installed yet (prepared at start). */
  modelDir: string | null;
}

function venvPaths(cacheDir: string): { venv: string; python: string; cli: string } {
  const venv = join(cacheDir, 'infinity-venv');
  const bin = join(venv, process.platform === 'win32' ? 'Scripts' : 'bin');
  return {
    venv,
    python: join(bin, process.platform === 'win32' ? 'python.exe' : 'python'),
    cli: join(bin, 'infinity_emb'),
  };
}

/**
 * Creates the venv unless it is complete already (then it returns at once) and prepares the model
 * from `modelSource` when it is installed. Needs `python3` (or `$PYTHON`) and, the first time, the
 * package index (~5.8 GB). `log` receives one line per step.
 */
export async function ensureInfinityServer(
  cacheDir: string,
  options: { modelSource?: string; log?: (line: string) => void } = {},
): Promise<InfinityInstall> {
  const log = options.log ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const paths = venvPaths(cacheDir);
  const wanted = sha256Text(readFileSync(REQUIREMENTS, 'utf8'));
  if (readMarker(paths.venv)?.requirements !== wanted) {
    mkdirSync(cacheDir, { recursive: true });
    // Leftovers of an interrupted or older install: a venv holds absolute paths, so it is built
    // where it stays and marked complete last.
    rmSync(paths.venv, { recursive: true, force: true });
    const python = process.env.PYTHON ?? 'python3';
    log(`creating ${paths.venv} with ${python}`);
    await run(python, ['-m', 'venv', paths.venv]);
    log(
      `installing infinity-emb[server,optimum]==${INFINITY_VERSION} with torch: ~5.8 GB, once per user (a few minutes)`,
    );
    await run(paths.python, [
      '-m',
      'pip',
      'install',
      '--disable-pip-version-check',
      '--quiet',
      '--prefer-binary',
      '-r',
      REQUIREMENTS,
    ]);
    const version = (
      await run(paths.python, ['-c', 'import infinity_emb; print(infinity_emb.__version__)'])
    ).trim();
    if (version !== INFINITY_VERSION) {
      throw new Error(`infinity-emb ${version} was installed, expected ${INFINITY_VERSION}`);
    }
    writeMarker(paths.venv, { version, requirements: wanted });
    log(`installed infinity-emb ${version} in ${paths.venv}`);
  }
  const source = options.modelSource ?? join(MODELS_DIR, INFINITY_MODEL);
  const modelDir = existsSync(source)
    ? await prepareModel(cacheDir, source, paths.python, log)
    : null;
  if (modelDir === null) log(`${source} is not installed yet: the model is prepared at start`);
  return { python: paths.python, serveCommand: [paths.cli, 'v2'], modelDir };
}

/**
 * `<cacheDir>/infinity-models/<name>/`: the flat folder with the rewritten graph, made from the
 * installed model folder (`onnx/model.onnx`, else the int8 `onnx/model_quantized.onnx`).
 */
async function prepareModel(
  cacheDir: string,
  source: string,
  python: string,
  log: (line: string) => void,
): Promise<string> {
  const onnx = ['onnx/model.onnx', 'onnx/model_quantized.onnx']
    .map((f) => join(source, f))
    .find((f) => existsSync(f));
  if (onnx === undefined) throw new Error(`${source} has no onnx/model.onnx`);
  const sourceSha = await sha256File(onnx);
  const dir = join(cacheDir, 'infinity-models', INFINITY_MODEL);
  if (readMarker(dir)?.source === sourceSha) return dir;
  log(`preparing ${dir} for infinity (flat folder, token types computed in the graph)`);
  const staging = `${dir}.staging`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  for (const file of [
    'config.json',
    'tokenizer.json',
    'tokenizer_config.json',
    'special_tokens_map.json',
    'vocab.txt',
  ]) {
    if (existsSync(join(source, file))) await copyFile(join(source, file), join(staging, file));
  }
  await run(python, [join(HERE, 'infinity_tti_graph.py'), onnx, join(staging, 'model.onnx')]);
  writeMarker(staging, { source: sourceSha });
  rmSync(dir, { recursive: true, force: true });
  await rename(staging, dir);
  return dir;
}

interface Marker {
  version?: string;
  requirements?: string;
  source?: string;
}

function readMarker(dir: string): Marker | null {
  try {
    return JSON.parse(readFileSync(join(dir, MARKER), 'utf8')) as Marker;
  } catch {
    return null;
  }
}

function writeMarker(dir: string, marker: Marker): void {
  const body = { ...marker, installedAt: new Date().toISOString() };
  writeFileSync(join(dir, MARKER), `${JSON.stringify(body, null, 2)}\n`);
}

function sha256Text(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function sha256File(path: string): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const hash = createHash('sha256');
    createReadStream(path)
      .on('data', (d) => hash.update(d))
      .on('error', reject)
      .on('end', () => {
        resolvePromise(hash.digest('hex'));
      });
  });
}

/** Runs a command to completion; its stdout, or an error carrying the tail of its output. */
function run(command: string, args: readonly string[]): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let output = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      output = (output + d.toString()).slice(-4000);
    });
    child.stderr.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
    child.once('error', (err) => {
      reject(new Error(`cannot run ${command}: ${err.message}`));
    });
    child.once('close', (code) => {
      if (code === 0) resolvePromise(stdout);
      else reject(new Error(`${[command, ...args].join(' ')} exited with ${code}:\n${output}`));
    });
  });
}

// ---------- the server ----------

export interface InfinityServer {
  /** RERANK_BASE_URL: the server answers `POST ${baseUrl}/rerank`. */
  baseUrl: string;
  port: number;
  pid: number;
  /** Kills the server's process group and resolves once it has exited. */
  stop(): Promise<void>;
}

export interface InfinityStartOptions {
  /** Default: the per-user model-sources folder (sources.ts). */
  cacheDir?: string;
  /** The installed model folder (default `models/ms-marco-MiniLM-L-12-v2`). */
  modelSource?: string;
  /** Bearer key the server demands (`--api-key`); none by default. */
  apiKey?: string;
  /** Pairs per inference (default 32, infinity's own). */
  batchSize?: number;
  /** How long to wait for `GET /health` (default 120 s: torch takes a while to import). */
  startTimeoutMs?: number;
}

/** Starts `infinity_emb v2 --model-id .` inside the prepared folder; resolves once it is healthy. */
export async function startInfinityServer(
  options: InfinityStartOptions = {},
): Promise<InfinityServer> {
  const install = await ensureInfinityServer(options.cacheDir ?? sourcesDir(), {
    ...(options.modelSource === undefined ? {} : { modelSource: options.modelSource }),
  });
  if (install.modelDir === null) {
    throw new Error(
      `${INFINITY_MODEL} is not installed: run \`npm run models:install -- ${INFINITY_MODEL}\``,
    );
  }
  const port = await freePort();
  const [command = '', ...args] = install.serveCommand;
  const { origin, pid, stop } = await startServerProcess({
    name: 'infinity',
    command,
    args: [
      ...args,
      '--model-id',
      '.',
      '--served-model-name',
      INFINITY_MODEL,
      '--engine',
      'optimum',
      '--device',
      'cpu',
      '--batch-size',
      String(options.batchSize ?? 32),
      '--no-model-warmup',
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--log-level',
      'warning',
      ...(options.apiKey === undefined ? [] : ['--api-key', options.apiKey]),
    ],
    port,
    cwd: install.modelDir,
    env: {
      ...process.env,
      HF_HUB_OFFLINE: '1',
      DO_NOT_TRACK: '1',
      INFINITY_ANONYMOUS_USAGE_STATS: '0',
    },
    startTimeoutMs: options.startTimeoutMs ?? 120_000,
    killAfterMs: 10_000,
  });
  return { baseUrl: origin, port, pid, stop };
}

// `tsx scripts/models/infinity.ts [--check]`: prepare the venv and model; --check starts it once.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const started = performance.now();
  const install = await ensureInfinityServer(sourcesDir(), {
    log: (line) => {
      console.log(line);
    },
  });
  console.log(
    `ready in ${Math.round(performance.now() - started)} ms: ${install.serveCommand.join(' ')}`,
  );
  if (process.argv.includes('--check')) {
    const server = await startInfinityServer();
    console.log(`infinity answers at ${server.baseUrl} (pid ${server.pid})`);
    await server.stop();
  }
}

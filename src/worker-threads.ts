/**
 * Starts a worker thread from compiled output and from TypeScript sources alike (the embedding
 * model's, the chunker's for large documents, the PostgreSQL queue's lease keeper).
 *
 * From `dist`, `<name>.js` sits next to the module that asks for it. From `src` (vitest, which transpiles only
 * the main thread's modules) there is no `.js`, and Node 20 cannot strip types. The worker then
 * registers module hooks that transpile `.ts` files with the TypeScript compiler (a dev
 * dependency, present wherever sources are run) before importing `<name>.ts`: the worker always
 * runs the current sources, never a stale build.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

/** ESM module hooks: `./x.js` → `./x.ts` when only the source exists; `.ts` → transpiled ESM. */
const TS_HOOKS = `
import { access, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
let ts;
export async function initialize(data) {
  ts = (await import(data.typescript)).default;
}
export async function resolve(specifier, context, next) {
  const parent = context.parentURL;
  if (parent && parent.endsWith('.ts') && /^\\.\\.?\\//.test(specifier) && specifier.endsWith('.js')) {
    const js = new URL(specifier, parent);
    const source = new URL(specifier.slice(0, -3) + '.ts', parent);
    try {
      await access(fileURLToPath(js));
    } catch {
      return { url: source.href, shortCircuit: true };
    }
  }
  return next(specifier, context);
}
export async function load(url, context, next) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return next(url, context);
  const fileName = fileURLToPath(url);
  const output = ts.transpileModule(await readFile(fileName, 'utf8'), {
    fileName,
    compilerOptions: {
      module: ts.ModuleKind.ESNext,
      target: ts.ScriptTarget.ES2022,
      verbatimModuleSyntax: true,
      inlineSourceMap: true,
    },
  });
  return { format: 'module', source: output.outputText, shortCircuit: true };
}`;

/** CommonJS bootstrap (eval'd workers are scripts): install the hooks, then import the entry. */
const TS_BOOTSTRAP = `
const { register } = require('node:module');
const { workerData } = require('node:worker_threads');
register('data:text/javascript,' + encodeURIComponent(workerData.hooks), {
  data: { typescript: workerData.typescript },
});
import(workerData.entry).catch((error) => setImmediate(() => { throw error; }));`;

type WorkerMode = 'compiled' | 'typescript';

/**
 * A worker thread running `<name>.js` next to `base` (a module's `import.meta.url`), or its
 * `.ts` source through the hooks above. Throws an Error saying what is missing.
 */
export function spawnWorkerModule(
  base: string,
  name: string,
): { worker: Worker; mode: WorkerMode } {
  const compiled = new URL(`./${name}.js`, base);
  if (existsSync(fileURLToPath(compiled)))
    return { worker: new Worker(compiled), mode: 'compiled' };

  const source = new URL(`./${name}.ts`, base);
  if (!existsSync(fileURLToPath(source))) {
    throw new Error(`worker ${name} not found next to ${base}`);
  }
  let typescript: string;
  try {
    typescript = pathToFileURL(createRequire(import.meta.url).resolve('typescript')).href;
  } catch (cause) {
    throw new Error('running from TypeScript sources needs the "typescript" package', { cause });
  }
  const worker = new Worker(TS_BOOTSTRAP, {
    eval: true,
    workerData: { hooks: TS_HOOKS, typescript, entry: source.href },
  });
  return { worker, mode: 'typescript' };
}

/**
 * `aps models pull NAME` (download from a Hugging Face compatible hub, checked and resumable)
 * and `aps models list` (what the models folder holds). Neither opens the database; both read the
 * models folder from the config (EMBEDDING_MODEL_DIR), or `--dir`.
 */
import { resolve } from 'node:path';
import { Option, type Command } from 'commander';
import { loadConfig, type Config } from '../config.js';
import { findModel } from '../knowledge/embeddings/catalogue.js';
import { checkRelativePath, formatBytes } from '../knowledge/embeddings/model-files.js';
import { ByteProgress } from './models-progress.js';
import {
  checkRepoId,
  DEFAULT_ENDPOINT,
  normaliseEndpoint,
  pullModel,
  shownEndpoint,
} from './models-hub.js';
import { listInstalled, missingModels, type InstalledModel } from './models-list.js';
import { shownPath, table } from './output.js';
import type { CliSession } from './session.js';

interface PullOptions {
  revision: string;
  dir?: string;
  endpoint: string;
  include?: string[];
  json?: boolean;
}

/** A failure of a `models` command: printed as `aps models <command>: <message>`, exit code 1. */
function report(session: CliSession, command: string, error: unknown): void {
  session.status.clear();
  console.error(`aps models ${command}: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
}

/** The config without the database line other commands print: these never touch a database. */
function config(program: Command): Config {
  const dataDir = program.opts<{ dataDir?: string }>().dataDir;
  return loadConfig(dataDir === undefined ? process.env : { ...process.env, DATA_DIR: dataDir });
}

async function pull(
  program: Command,
  session: CliSession,
  name: string,
  opts: PullOptions,
): Promise<void> {
  const entry = findModel(name);
  const repo = checkRepoId(entry?.hubRepo ?? name);
  // Refused before anything is asked of the hub or written.
  for (const path of opts.include ?? []) checkRelativePath(path);
  const root = opts.dir === undefined ? config(program).embedding.modelDir : resolve(opts.dir);
  const dir = resolve(root, entry?.name ?? repo);
  // Read here, at the edge, like --url/APS_URL for `aps mcp`; never echoed anywhere.
  const token = process.env.HF_TOKEN?.trim() ?? '';
  const endpoint = normaliseEndpoint(opts.endpoint);
  session.note(
    `Pulling ${repo}@${opts.revision} from ${shownEndpoint(endpoint)} into ${shownPath(dir)}`,
  );
  const progress = new ByteProgress(session.status);
  const started = performance.now();
  const result = await pullModel({
    client: { endpoint, token: token === '' ? null : token },
    repo,
    revision: opts.revision,
    dir,
    name: entry?.name ?? repo,
    kind: entry?.kind ?? null,
    include: opts.include ?? [],
    events: {
      planned: (files, total) => {
        progress.start(total);
      },
      kept: (path) => {
        session.note(`kept ${path} (already downloaded, checksum matches)`);
      },
      request: (path, from, attempt) => {
        progress.begin(path, from, attempt);
      },
      progress: (path, bytes) => {
        progress.update(bytes);
      },
      fileDone: (path, bytes) => {
        progress.done(bytes);
      },
    },
  }).finally(() => {
    progress.end();
  });
  const seconds = (performance.now() - started) / 1000;
  const { manifest } = result;
  const bytes = manifest.files.reduce((sum, f) => sum + f.bytes, 0);
  const revision = manifest.source.revision ?? opts.revision;
  if (opts.json === true) {
    console.log(
      JSON.stringify({
        name: manifest.name,
        kind: manifest.kind,
        dir,
        repo,
        revision,
        upToDate: result.upToDate,
        files: manifest.files.length,
        bytes,
        downloaded: result.downloaded,
        downloadedBytes: result.downloadedBytes,
        requests: result.requests,
        seconds: Number(seconds.toFixed(2)),
      }),
    );
    return;
  }
  const what = `${manifest.name} (${repo}@${revision.slice(0, 12)}) in ${shownPath(dir)}`;
  if (result.upToDate) console.log(`up to date: ${what}, ${formatBytes(bytes)}`);
  else
    console.log(
      `pulled ${what}: ${manifest.files.length} files, ${formatBytes(bytes)}` +
        ` (${result.downloaded} downloaded, ${formatBytes(result.downloadedBytes)}) in ${seconds.toFixed(1)} s`,
    );
}

function sourceText(m: InstalledModel): string {
  if (m.problem !== null) return 'invalid manifest';
  const s = m.source;
  if (s === null) return '(no manifest)';
  const at = (v?: string) => (v === undefined ? '' : `@${v.slice(0, 12)}`);
  switch (s.type) {
    case 'hub':
      return `hub ${s.repo ?? '?'}${at(s.revision)}`;
    case 'maven':
    case 'pypi':
    case 'converted':
      return `${s.type} ${s.package ?? '?'}${s.version === undefined ? '' : ` ${s.version}`}`;
  }
}

async function list(program: Command, session: CliSession, opts: { dir?: string; json?: boolean }) {
  const cfg = config(program);
  const root = opts.dir === undefined ? cfg.embedding.modelDir : resolve(opts.dir);
  const installed = await listInstalled(root);
  const missing = missingModels(installed, [
    {
      name: cfg.embedding.provider === 'transformers' ? cfg.embedding.model : null,
      setting: 'EMBEDDING_MODEL',
    },
    {
      name: cfg.rerank.provider === 'transformers' ? cfg.rerank.model : null,
      setting: 'RERANK_MODEL',
    },
  ]);
  if (opts.json === true) {
    console.log(JSON.stringify({ dir: root, installed, missing }));
    return;
  }
  session.note(`Models in ${shownPath(root)}`);
  if (installed.length === 0) session.note('No models installed.');
  else {
    const rows = installed.map((m) => [
      m.name,
      m.kind,
      m.dimensions === null ? '-' : String(m.dimensions),
      m.fp32 ? 'yes' : '-',
      m.int8 ? 'yes' : '-',
      formatBytes(m.bytes),
      sourceText(m),
    ]);
    console.log(table(['NAME', 'KIND', 'DIMS', 'FP32', 'INT8', 'SIZE', 'SOURCE'], rows));
  }
  for (const m of missing)
    console.log(`missing: ${m.name} (${m.setting}): install with ${m.install}`);
}

export function registerModels(program: Command, session: CliSession): void {
  const models = program
    .command('models')
    .description('Download embedding and reranking models, list the installed ones');

  models
    .command('pull')
    .description(
      'Download a model from a Hugging Face compatible hub (HF_ENDPOINT, HF_TOKEN): a catalogue ' +
        'name (bge-small-en-v1.5, all-MiniLM-L6-v2, e5-small-v2, multilingual-e5-small, ' +
        'ms-marco-MiniLM-L-12-v2) or an owner/name repository with ONNX weights',
    )
    .argument('<name>', 'catalogue name or owner/name')
    .option('--revision <rev>', 'branch, tag or commit', 'main')
    .option('--dir <dir>', 'models folder (default: EMBEDDING_MODEL_DIR, ./models)')
    .addOption(
      new Option('--endpoint <url>', 'the hub').env('HF_ENDPOINT').default(DEFAULT_ENDPOINT),
    )
    .option('--include <path...>', 'more files of the repository to download')
    .option('--json', 'print the outcome as JSON')
    .action(async (name: string, opts: PullOptions) => {
      await pull(program, session, name, opts).catch((error: unknown) => {
        report(session, 'pull', error);
      });
    });

  models
    .command('list')
    .description('List the installed models: kind, dimensions, weights, size, source')
    .option('--dir <dir>', 'models folder (default: EMBEDDING_MODEL_DIR, ./models)')
    .option('--json', 'print the models as JSON')
    .action(async (opts: { dir?: string; json?: boolean }) => {
      await list(program, session, opts).catch((error: unknown) => {
        report(session, 'list', error);
      });
    });
}

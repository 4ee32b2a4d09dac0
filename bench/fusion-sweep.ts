/**
 * `npx tsx bench/fusion-sweep.ts`: tunes the hybrid fusion parameters on SciFact train, in process
 * (same ingestion path as bench:scifact, then the stores are queried directly for speed).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadConfig } from '../src/config.js';
import { createContext } from '../src/context.js';
import { fuse } from '../src/knowledge/fusion.js';
import type { PendingFile } from '../src/knowledge/storage/storage.js';
import { Readable } from 'node:stream';

const dataset = resolve(import.meta.dirname, '../../shared/datasets/scifact');
const read = (f: string) => readFileSync(join(dataset, f), 'utf8').split('\n').filter(Boolean);
const corpus = read('corpus.jsonl').map(
  (l) => JSON.parse(l) as { _id: string; title: string; text: string },
);
const queries = read('queries-train.jsonl').map(
  (l) => JSON.parse(l) as { _id: string; text: string },
);
const qrels = new Map<string, Set<string>>();
for (const line of read('qrels-train.tsv').slice(1)) {
  const [q, d] = line.split('\t');
  if (!qrels.has(q!)) qrels.set(q!, new Set());
  qrels.get(q!)!.add(d!);
}
const qs = queries.filter((q) => qrels.has(q._id));

const dir = mkdtempSync(join(tmpdir(), 'aps-sweep-'));
const config = loadConfig(
  {
    DATA_DIR: dir,
    LOG_LEVEL: 'warn',
    EMBEDDING_CACHE_DIR: resolve(import.meta.dirname, '../node_modules/.cache/aps-test-embeddings'),
    UPLOAD_MAX_BYTES: String(1 << 30),
  },
  dir,
);
const ctx = await createContext(config);
const md = corpus.map((d) => `# ${d._id}\n\n${d.title}\n\n${d.text}\n`).join('\n');
const file: PendingFile = await ctx.knowledge.storage.receive(
  Readable.from([Buffer.from(md)]),
  1 << 30,
  () => new Error('big'),
);
const { document } = await ctx.knowledge.documents.create({
  file,
  fileName: 'scifact.md',
  projectId: undefined,
  source: undefined,
});
await ctx.knowledge.indexing.index(document.id, { maxChars: 8000, overlapChars: 400 });
const store = (
  ctx.knowledge.retrieval as unknown as {
    store: import('../src/knowledge/search/chunk-store.js').ChunkStore;
  }
).store;
const embedder = ctx.knowledge.embedder;
const docOf = new Map(
  store.listChunks(document.id).map((c) => [c.id, c.section_path.split(' > ')[0]!]),
);

const pre = [];
for (const q of qs) {
  const keyword = store.keywordSearch(q.text, {}, 100);
  const vector = await embedder.embedQuery(q.text);
  const semantic = store.vectorSearch(vector, embedder.model, {}, 100);
  const cosine = store.similarities(
    vector,
    embedder.model,
    keyword.map((k) => k.chunkId),
  );
  for (const s of semantic) cosine.set(s.chunkId, s.score);
  pre.push({ q, keyword, semantic, cosine });
}
function ndcg(ranked: string[], rel: Set<string>) {
  let dcg = 0,
    idcg = 0;
  ranked.slice(0, 10).forEach((d, i) => {
    if (rel.has(d)) dcg += 1 / Math.log2(i + 2);
  });
  for (let i = 0; i < Math.min(rel.size, 10); i++) idcg += 1 / Math.log2(i + 2);
  return dcg / idcg;
}
for (const denseWeight of [0, 0.05, 0.1, 0.15, 0.2, 0.3]) {
  for (const bm25Half of [4, 8, 16, 32]) {
    let sum = 0;
    for (const p of pre) {
      const ranked = fuse(p.keyword, p.semantic, p.cosine, { denseWeight, bm25Half }).map((c) =>
        docOf.get(c.chunkId)!,
      );
      sum += ndcg([...new Set(ranked)], qrels.get(p.q._id)!);
    }
    console.log(`w=${denseWeight} half=${bm25Half} nDCG@10=${(sum / pre.length).toFixed(4)}`);
  }
}
await ctx.close();
rmSync(dir, { recursive: true, force: true });

/**
 * `npm run bench:scifact`: retrieval quality on SciFact (BEIR), through the product's own path.
 *
 * The corpus (../shared/datasets/scifact, not shipped: CC BY-NC) is written as one markdown file,
 * one `# <doc id>` section per abstract (title as first line), uploaded over HTTP to a real server,
 * indexed (converter process → chunker → embedder → SQLite), and every train query is sent to
 * POST /knowledge/retrieve in each mode. A document's rank is that of its best chunk.
 *
 * Options: --dataset DIR (default ../shared/datasets/scifact), --limit N (queries), --modes a,b
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.js';
import { startServer } from '../src/server.js';
import { rankMetrics } from './retrieval/metrics.js';

const { values } = parseArgs({
  options: {
    dataset: {
      type: 'string',
      default: resolve(import.meta.dirname, '../../shared/datasets/scifact'),
    },
    limit: { type: 'string' },
    modes: { type: 'string', default: 'keyword,semantic,hybrid' },
    cache: {
      type: 'string',
      default: resolve(import.meta.dirname, '../node_modules/.cache/aps-test-embeddings'),
    },
  },
});

interface Row {
  _id: string;
  title?: string;
  text: string;
}
const readJsonl = (file: string): Row[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Row);

const corpus = readJsonl(join(values.dataset, 'corpus.jsonl'));
let queries = readJsonl(join(values.dataset, 'queries-train.jsonl'));
const qrels = new Map<string, Set<string>>();
for (const line of readFileSync(join(values.dataset, 'qrels-train.tsv'), 'utf8')
  .split('\n')
  .slice(1)) {
  const [q, d, score] = line.split('\t');
  if (q === undefined || d === undefined || Number(score) <= 0) continue;
  if (!qrels.has(q)) qrels.set(q, new Set());
  qrels.get(q)?.add(d);
}
queries = queries.filter((q) => qrels.has(q._id));
if (values.limit !== undefined) queries = queries.slice(0, Number(values.limit));

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;

const dir = mkdtempSync(join(tmpdir(), 'aps-scifact-'));
const config = loadConfig(
  {
    DATA_DIR: dir,
    PORT: '0',
    LOG_LEVEL: 'warn',
    NODE_ENV: 'test',
    EMBEDDING_CACHE_DIR: values.cache,
    UPLOAD_MAX_BYTES: String(1 << 30),
  },
  dir,
);
const lines: string[] = [];
const server = await startServer(config, { print: (l) => lines.push(l) });
try {
  const key = /^\s+(aps_\S+)$/m.exec(lines.join('\n'))?.[1] ?? '';
  const api = `${server.address}${config.apiPrefix}/knowledge`;
  const headers = { authorization: `Bearer ${key}` };

  const markdown = corpus.map((d) => `# ${d._id}\n\n${d.title ?? ''}\n\n${d.text}\n`).join('\n');
  const form = new FormData();
  form.append('file', new Blob([markdown], { type: 'text/markdown' }), 'scifact.md');
  let t = performance.now();
  const uploaded = (await (
    await fetch(`${api}/documents/upload`, { method: 'POST', headers, body: form })
  ).json()) as { id: string };
  const index = await fetch(`${api}/documents/${uploaded.id}/index`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ maxChars: 8000, overlapChars: 400 }),
  });
  const indexed = (await index.json()) as {
    chunkCount: number;
    embeddingModel: string;
    document: { converterMeta: { timings: Record<string, number> } };
  };
  const ingestMs = performance.now() - t;
  console.log(
    `indexed ${corpus.length} abstracts → ${indexed.chunkCount} chunks in ${(ingestMs / 1000).toFixed(1)} s (${indexed.embeddingModel}); stages ms: ${JSON.stringify(indexed.document.converterMeta.timings)}`,
  );

  console.log(`\n${queries.length} SciFact train queries\n`);
  console.log('| mode | nDCG@10 | Recall@10 | MRR@10 | p50 ms | p95 ms |');
  console.log('|---|---|---|---|---|---|');
  for (const mode of values.modes.split(',')) {
    const sums = { ndcg: 0, recall: 0, mrr: 0 };
    const latencies: number[] = [];
    for (const q of queries) {
      t = performance.now();
      const res = await fetch(`${api}/retrieve`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ query: q.text, topK: 30, mode, minScore: -1 }),
      });
      const body = (await res.json()) as { items: { sectionPath: string }[] };
      latencies.push(performance.now() - t);
      const ranked = [...new Set(body.items.map((i) => i.sectionPath.split(' > ')[0] ?? ''))];
      const m = rankMetrics(ranked, qrels.get(q._id) ?? new Set());
      sums.ndcg += m.ndcg10;
      sums.recall += m.recall10;
      sums.mrr += m.mrr10;
    }
    latencies.sort((a, b) => a - b);
    const n = queries.length;
    console.log(
      `| ${mode} | ${(sums.ndcg / n).toFixed(3)} | ${(sums.recall / n).toFixed(3)} | ${(sums.mrr / n).toFixed(3)} | ${percentile(latencies, 0.5).toFixed(1)} | ${percentile(latencies, 0.95).toFixed(1)} |`,
    );
  }
} finally {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
}

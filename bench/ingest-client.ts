/** The HTTP client side of the ingest benchmarks: uploads, index requests, a worker pool. */
import type { ScifactAbstract as Abstract } from './retrieval/sets.js';

/** The bootstrap key the bench servers start with. */
export const BENCH_KEY = 'aps_bench_ingest_key_0123456789abcdef';
const PREFIX = '/api/v1';
const auth = { authorization: `Bearer ${BENCH_KEY}` };

export async function upload(
  base: string,
  doc: Abstract,
  oneStep = false,
): Promise<{ id: string; status: string }> {
  const form = new FormData();
  if (oneStep) form.append('index', 'true');
  form.append('file', new Blob([doc.text], { type: 'text/markdown' }), doc.name);
  const res = await fetch(`${base}${PREFIX}/knowledge/documents/upload`, {
    method: 'POST',
    headers: auth,
    body: form,
  });
  if (res.status !== 201 && res.status !== 200) {
    throw new Error(`upload ${doc.name}: ${res.status} ${await res.text()}`);
  }
  return (await res.json()) as { id: string; status: string };
}

export async function index(base: string, id: string): Promise<void> {
  const res = await fetch(`${base}${PREFIX}/knowledge/documents/${id}/index`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: '{}',
  });
  if (res.status !== 201) throw new Error(`index ${id}: ${res.status} ${await res.text()}`);
}

/** Waits until no document is `indexing` (the one-step uploads queued their runs). */
export async function indexingDone(base: string): Promise<void> {
  for (;;) {
    const res = await fetch(`${base}${PREFIX}/knowledge/status`, { headers: auth });
    const status = (await res.json()) as { documents: { indexing: number; failed: number } };
    if (status.documents.failed > 0) throw new Error(`${status.documents.failed} runs failed`);
    if (status.documents.indexing === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Runs `work` over `items` with `concurrency` workers; seconds taken. */
export async function pooledRun<T>(
  items: T[],
  concurrency: number,
  work: (item: T) => Promise<void>,
) {
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) {
        const item = items[next++] as T;
        await work(item);
      }
    }),
  );
  return (performance.now() - start) / 1000;
}

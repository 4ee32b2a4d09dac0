import { describe, expect, it } from 'vitest';
import { SliceQueue, type Slice } from '../../../../src/knowledge/embeddings/static/slice-queue.js';

const query = (job: string, text = job): Slice<string> => ({
  job,
  offset: 0,
  texts: [text],
  query: true,
});
const doc = (job: string, n = 3): Slice<string> => ({
  job,
  offset: 0,
  texts: Array.from({ length: n }, (_, i) => `${job}-${i}`),
  query: false,
});
const jobs = (slices: Slice<string>[]) => slices.map((s) => s.job);

describe('SliceQueue (the embedding worker line)', () => {
  it('sends every waiting query in one message, oldest first, ahead of indexing slices', () => {
    const q = new SliceQueue<string>();
    q.push([doc('d1')]);
    for (let i = 0; i < 300; i++) q.push([query(`q${i}`)]);
    q.push([doc('d2')]);
    // One round trip for 128 queries instead of 128: the line no longer grows with the load.
    const first = q.take(128, 1 << 20);
    expect(jobs(first)).toEqual(Array.from({ length: 128 }, (_, i) => `q${i}`));
    expect(jobs(q.take(128, 1 << 20))).toEqual(
      Array.from({ length: 128 }, (_, i) => `q${i + 128}`),
    );
    expect(jobs(q.take(128, 1 << 20))).toEqual(Array.from({ length: 44 }, (_, i) => `q${i + 256}`));
    expect(jobs(q.take(128, 1 << 20))).toEqual(['d1']);
    expect(jobs(q.take(128, 1 << 20))).toEqual(['d2']);
    expect(q.take(128, 1 << 20)).toEqual([]);
  });

  it('bounds a batch by characters, but always sends at least one query', () => {
    const q = new SliceQueue<string>();
    q.push([query('a', 'x'.repeat(60)), query('b', 'y'.repeat(60)), query('c', 'z')]);
    expect(jobs(q.take(128, 100))).toEqual(['a']);
    expect(jobs(q.take(128, 10))).toEqual(['b']);
    expect(jobs(q.take(128, 10))).toEqual(['c']);
  });

  it('drops an abandoned job, keeping the others in arrival order', () => {
    const q = new SliceQueue<string>();
    q.push([query('a'), query('b'), query('c')]);
    q.push([doc('d'), { ...doc('d'), offset: 3 }]);
    q.drop('b');
    q.drop('d');
    expect(q.length).toBe(2);
    expect([...q.jobs()]).toEqual(['a', 'c']);
    expect(jobs(q.take(128, 1 << 20))).toEqual(['a', 'c']);
  });
});

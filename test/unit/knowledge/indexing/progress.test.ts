/**
 * The progress reporter's schedule: a short run writes nothing, a long one writes each new stage
 * at once after the quiet period and advances at most every interval, and nothing after it ends.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { FastifyBaseLogger } from 'fastify';
import type { DocumentsRepository } from '../../../../src/knowledge/documents/documents.repository.js';
import type { KnowledgeEvents } from '../../../../src/knowledge/events/events.js';
import { progressReporter } from '../../../../src/knowledge/indexing/progress.js';

/** Records what the reporter writes (the repository and the events are its only outputs). */
function recorder() {
  const writes: { stage: string; done: number; total: number | null }[] = [];
  let announced = 0;
  const repo = {
    setProgress: (_id: string, _token: string, progress: string) => {
      writes.push(JSON.parse(progress) as (typeof writes)[number]);
      return Promise.resolve(true);
    },
  } as unknown as DocumentsRepository;
  const events = {
    announce: () => {
      announced += 1;
    },
  } as unknown as KnowledgeEvents;
  const log = { warn: () => undefined } as unknown as FastifyBaseLogger;
  return { writes, announced: () => announced, deps: { repo, events, log } };
}

describe('progress reporter', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('writes nothing for a run that ends within the quiet period', async () => {
    const r = recorder();
    const p = progressReporter({ ...r.deps, quietMs: 250, intervalMs: 400 }, 'd', 't');
    p.stage('converting');
    p.stage('chunking');
    p.stage('embedding', 10);
    p.advance(10);
    p.stage('committing', 10);
    await vi.advanceTimersByTimeAsync(100);
    p.finish();
    await vi.advanceTimersByTimeAsync(1000);
    expect(r.writes).toEqual([]);
    expect(r.announced()).toBe(0);
  });

  it('writes the latest state when the quiet period ends, then stages at once and advances every interval', async () => {
    const r = recorder();
    const p = progressReporter({ ...r.deps, quietMs: 250, intervalMs: 400 }, 'd', 't');
    p.stage('converting');
    p.advance(1, 5);
    await vi.advanceTimersByTimeAsync(249);
    expect(r.writes).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(r.writes).toEqual([{ stage: 'converting', done: 1, total: 5 }]);
    p.advance(2, 5);
    p.advance(3, 5);
    await vi.advanceTimersByTimeAsync(399);
    expect(r.writes).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(r.writes.at(-1)).toEqual({ stage: 'converting', done: 3, total: 5 });
    p.stage('embedding', 100);
    await vi.advanceTimersByTimeAsync(0);
    expect(r.writes.at(-1)).toEqual({ stage: 'embedding', done: 0, total: 100 });
    expect(r.announced()).toBe(r.writes.length);
    p.advance(50);
    p.finish();
    await vi.advanceTimersByTimeAsync(1000);
    expect(r.writes.at(-1)).toEqual({ stage: 'embedding', done: 0, total: 100 });
  });
});

/**
 * The progress of one indexing run: `{stage, done, total}` written to the document's row (so every
 * instance can show it) and announced as `document.progress`. A new stage is written at once;
 * advances within a stage at most every `intervalMs`; one write at a time, the latest state wins.
 * Writes are guarded by the run's token (a run that lost the document writes nothing) and never
 * fail the run.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { DocumentsRepository } from './documents.repository.js';
import type { KnowledgeEvents } from './events.js';
import type { Progress, ProgressStage } from './knowledge.schemas.js';

export interface ProgressReporter {
  /** Enters `stage` (done 0). */
  stage(stage: ProgressStage, total?: number | null): void;
  /** `done` of the stage's total so far. */
  advance(done: number, total?: number | null): void;
}

/** For runs nobody follows (tests, tools). */
export const noProgress: ProgressReporter = {
  stage: () => undefined,
  advance: () => undefined,
};

interface ReporterDeps {
  repo: DocumentsRepository;
  events: KnowledgeEvents;
  log: FastifyBaseLogger;
  /** Least time between two writes within a stage. */
  intervalMs?: number;
}

export function progressReporter(
  deps: ReporterDeps,
  documentId: string,
  token: string,
): ProgressReporter {
  const intervalMs = deps.intervalMs ?? 400;
  let current: Progress = { stage: 'queued', done: 0, total: null };
  let writing = false;
  let pending = false;
  let lastWrite = 0;
  let timer: NodeJS.Timeout | undefined;

  const write = async (): Promise<void> => {
    if (writing) {
      pending = true;
      return;
    }
    writing = true;
    lastWrite = performance.now();
    try {
      const owned = await deps.repo.setProgress(documentId, token, JSON.stringify(current));
      if (owned) deps.events.announce('document.progress', { id: documentId, projectId: null });
    } catch (error) {
      deps.log.warn({ err: error, documentId }, 'could not record indexing progress');
    } finally {
      writing = false;
      if (pending) {
        pending = false;
        void write();
      }
    }
  };

  const schedule = (now: boolean): void => {
    if (now) {
      clearTimeout(timer);
      timer = undefined;
      void write();
      return;
    }
    if (timer !== undefined) return;
    const wait = Math.max(0, intervalMs - (performance.now() - lastWrite));
    timer = setTimeout(() => {
      timer = undefined;
      void write();
    }, wait);
    timer.unref();
  };

  return {
    stage(stage, total = null) {
      current = { stage, done: 0, total };
      schedule(true);
    },
    advance(done, total = current.total) {
      current = { stage: current.stage, done, total };
      schedule(performance.now() - lastWrite >= intervalMs);
    },
  };
}

/**
 * The progress of one indexing run: `{stage, done, total}` written to the document's row (so every
 * instance can show it) and announced as `document.progress`. Nothing is written during the run's
 * first `quietMs`: a small document goes from `queued` to its outcome without a write per stage (a
 * write each would be most of its indexing cost). After that a new stage is written at once,
 * advances within a stage at most every `intervalMs`; one write at a time, the latest state wins.
 * Writes are guarded by the run's token (a run that lost the document writes nothing), stop when
 * the run ends (`finish`) and never fail the run.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { DocumentsRepository } from '../documents/documents.repository.js';
import type { KnowledgeEvents } from '../events/events.js';
import type { Progress, ProgressStage } from '../documents/documents.schemas.js';

export interface ProgressReporter {
  /** Enters `stage` (done 0). */
  stage(stage: ProgressStage, total?: number | null): void;
  /** `done` of the stage's total so far. */
  advance(done: number, total?: number | null): void;
  /** The run ended: nothing more is written. */
  finish(): void;
}

/** For runs nobody follows (tests, tools). */
export const noProgress: ProgressReporter = {
  stage: () => undefined,
  advance: () => undefined,
  finish: () => undefined,
};

interface ReporterDeps {
  repo: DocumentsRepository;
  events: KnowledgeEvents;
  log: FastifyBaseLogger;
  /** Least time between two writes within a stage. */
  intervalMs?: number;
  /** How long a run goes before its progress is first written. */
  quietMs?: number;
}

export function progressReporter(
  deps: ReporterDeps,
  documentId: string,
  token: string,
): ProgressReporter {
  const intervalMs = deps.intervalMs ?? 400;
  const quietUntil = performance.now() + (deps.quietMs ?? 250);
  let current: Progress = { stage: 'queued', done: 0, total: null };
  let writing = false;
  let pending = false;
  let finished = false;
  let lastWrite = 0;
  let timer: NodeJS.Timeout | undefined;

  const write = async (): Promise<void> => {
    if (finished) return;
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
    if (finished) return;
    if (now && performance.now() >= quietUntil) {
      clearTimeout(timer);
      timer = undefined;
      void write();
      return;
    }
    if (timer !== undefined) return;
    const at = now ? quietUntil : Math.max(quietUntil, lastWrite + intervalMs);
    const wait = Math.max(0, at - performance.now());
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
    finish() {
      finished = true;
      clearTimeout(timer);
      timer = undefined;
    },
  };
}

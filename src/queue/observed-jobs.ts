/**
 * Times every job this instance runs, for the metrics: each handler registered from then on is
 * wrapped so that `observe(lane, outcome, seconds)` follows its run. Works on either queue, since
 * it wraps `handle` only (the queue itself keeps its type and its other methods).
 */
import type { JobObserver } from '../metrics/observer.js';
import type { JobHandler, JobQueue } from './queue.js';

/** `queue`, its handlers timed from now on. */
export function observeJobs<Q extends JobQueue>(queue: Q, observe: JobObserver): Q {
  const handle = queue.handle.bind(queue);
  queue.handle = (type, handler, options) => {
    const timed: JobHandler = async (payload, job) => {
      const start = performance.now();
      try {
        const result = await handler(payload, job);
        observe(type, 'completed', (performance.now() - start) / 1000);
        return result;
      } catch (error) {
        observe(type, 'failed', (performance.now() - start) / 1000);
        throw error;
      }
    };
    handle(type, timed, options);
  };
  return queue;
}

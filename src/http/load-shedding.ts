/**
 * Load shedding: beyond `maxInFlight` API requests being served at once, a new one is answered
 * 503 `OVERLOADED` with `Retry-After` at once, before its body is read or its credentials are
 * checked, instead of joining an unbounded line where every request gets slower (and requests on
 * new connections starve). Only requests under the API prefix count and are shed: `/health`,
 * `/health/ready` and `/docs` always answer.
 *
 * A slot is held from `onRequest` until the response is finished or its connection closes (a
 * client that gives up frees its slot at once, whatever the handler is still doing). Admitted
 * requests then start in arrival order through `fairTurn()` (event-loop-turns.ts), or at once
 * when nobody waits and this turn of the event loop has budget left (`mayStartNow()`).
 */
import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.js';
import { fairTurn, mayStartNow } from '../event-loop-turns.js';

export interface LoadSheddingOptions {
  /** Requests served at once; 0 turns shedding off. */
  maxInFlight: number;
  /** Only paths under this prefix count (the API's). */
  prefix: string;
  /** Seconds sent in `Retry-After`. */
  retryAfterSeconds?: number;
}

/** The live count and the requests shed so far, for tests, diagnostics and the metrics. */
export interface LoadSheddingState {
  readonly inFlight: number;
  /** Requests answered 503 `OVERLOADED` by this hook since the start. */
  readonly shed: number;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** API requests being served now (always 0 when shedding is off). */
    loadShedding: LoadSheddingState;
  }
}

export function registerLoadShedding(
  app: FastifyInstance,
  options: LoadSheddingOptions,
): LoadSheddingState {
  let inFlight = 0;
  let shed = 0;
  const state = {
    get inFlight() {
      return inFlight;
    },
    get shed() {
      return shed;
    },
  };
  app.decorate('loadShedding', state);
  if (options.maxInFlight === 0) return state;
  const retryAfter = String(options.retryAfterSeconds ?? 1);
  const counted = (url: string) =>
    url.startsWith(options.prefix) &&
    (url.length === options.prefix.length || '/?#'.includes(url.charAt(options.prefix.length)));

  const release = () => {
    inFlight--;
  };

  app.addHook('onRequest', (request, reply, done) => {
    if (!counted(request.url)) {
      done();
      return;
    }
    if (inFlight >= options.maxInFlight) {
      shed++;
      void reply.header('retry-after', retryAfter);
      done(new AppError('OVERLOADED'));
      return;
    }
    // A stream is admitted only while there is room, but does not keep its slot.
    if (request.routeOptions.config.stream === true) {
      done();
      return;
    }
    inFlight++;
    // 'close' follows the end of every response and a client's disconnect alike: exactly once
    // per response. One listener shared by all requests: no closure per request.
    reply.raw.on('close', release);
    // Admitted requests start in arrival order, a few milliseconds of them per turn of the event
    // loop: at once while this turn has budget and nobody waits, else in a later turn.
    if (mayStartNow()) done();
    else
      void fairTurn().then(() => {
        done();
      });
  });
  return state;
}

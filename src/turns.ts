/**
 * Fair turns of the event loop. Node (libuv ≥ 1.45) accepts one new connection per turn of the
 * event loop, and a turn runs every ready request's synchronous work: under load a turn lasts
 * seconds, and a client connecting then waits hundreds of turns before it is even read. Work that
 * awaits `fairTurn()` runs in arrival order, at most `TURN_BUDGET_MS` of it per turn (the rest in
 * the next turns), so turns stay short: new connections are accepted and `/health` answers.
 */

/** Milliseconds of queued work started per event-loop turn. */
const TURN_BUDGET_MS = 8;

const waiting: (() => void)[] = [];
let scheduled = false;
let turnStart = 0;

function runTurn(): void {
  scheduled = false;
  turnStart = performance.now();
  // Each waiter gets its own immediate: Node runs the microtasks (the waiter's work) between
  // immediates, so the elapsed time is known before the next one starts.
  const count = waiting.length;
  for (let i = 0; i < count; i++) setImmediate(step);
}

function step(): void {
  if (waiting.length === 0) return;
  if (performance.now() - turnStart >= TURN_BUDGET_MS) {
    schedule();
    return;
  }
  waiting.shift()?.();
}

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  // A timer, not an immediate: it runs after the next poll phase (new connections, new requests).
  setTimeout(runTurn, 0);
}

/** Resolves in call order, spreading the callers' work over event-loop turns. */
export function fairTurn(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    schedule();
  });
}

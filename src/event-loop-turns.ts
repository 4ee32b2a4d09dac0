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

/** Whether work started at once (mayStartNow) in this turn of the event loop, and since when. */
let directOpen = false;
let directStart = 0;

function closeDirect(): void {
  directOpen = false;
}

/**
 * Whether admitted work may start at once rather than await `fairTurn()`: when nobody waits for
 * a turn (so arrival order holds) and the work started at once in this turn of the event loop
 * has not used its budget. A server that is not saturated then adds no timer hop (≥ 1 ms) to
 * every request, which capped a small authenticated GET at a fraction of a bare server's rate
 * (docs/performance.md); under load the budget runs out and requests queue in fair turns.
 */
export function mayStartNow(): boolean {
  if (waiting.length > 0) return false;
  const now = performance.now();
  if (!directOpen) {
    directOpen = true;
    directStart = now;
    setImmediate(closeDirect); // after this turn's I/O callbacks: the next turn starts afresh
    return true;
  }
  return now - directStart < TURN_BUDGET_MS;
}

/** How long sliceTurn waits for a fair turn at most. */
const SLICE_MAX_WAIT_MS = 100;

/**
 * Between two slices of long background work (large commits and deletes): a fair turn, so
 * requests waiting for theirs start first (a plain immediate would let the slices take every
 * turn's budget and starve them); at most SLICE_MAX_WAIT_MS, so that work outside the turns
 * cannot starve the slices either.
 */
export function sliceTurn(): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    fairTurn(),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, SLICE_MAX_WAIT_MS))),
  ]).finally(() => {
    clearTimeout(timer);
  });
}

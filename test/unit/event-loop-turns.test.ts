import { describe, expect, it } from 'vitest';
import { fairTurn, mayStartNow } from '../../src/event-loop-turns.js';

const burn = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};

describe('fairTurn', () => {
  it('runs waiters in call order, spread over event-loop turns', async () => {
    const order: number[] = [];
    let probeAfter = -1;
    const waiters = Array.from({ length: 40 }, async (_, i) => {
      await fairTurn();
      burn(2);
      order.push(i);
    });
    // A timer set now stands for the rest of the server (a new connection, /health): it must
    // run long before 40 × 2 ms of queued work is done, not after all of it.
    setTimeout(() => {
      probeAfter = order.length;
    }, 0);
    await Promise.all(waiters);
    expect(order).toEqual(Array.from({ length: 40 }, (_, i) => i));
    expect(probeAfter).toBeGreaterThanOrEqual(0);
    expect(probeAfter).toBeLessThan(20);
  });
});

describe('mayStartNow', () => {
  const nextTurn = () => new Promise((resolve) => setTimeout(resolve, 0));

  it('lets work start at once until the turn has spent its budget, then again next turn', async () => {
    await nextTurn();
    expect(mayStartNow()).toBe(true);
    burn(2);
    expect(mayStartNow()).toBe(true);
    burn(10); // past the turn's budget
    expect(mayStartNow()).toBe(false);
    await nextTurn();
    expect(mayStartNow()).toBe(true);
  });

  it('never while others wait for a fair turn (arrival order)', async () => {
    await nextTurn();
    const waiting = fairTurn();
    expect(mayStartNow()).toBe(false);
    await waiting;
    expect(mayStartNow()).toBe(true);
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isAgentLevel, levelSatisfies, LEVELS } from '../../../src/auth/levels.js';

const level = fc.constantFrom(...LEVELS);

describe('levelSatisfies', () => {
  it('a route needing L0 admits only L0; L2 routes admit everyone', () => {
    expect(LEVELS.filter((l) => levelSatisfies(l, 'L0'))).toEqual(['L0']);
    expect(LEVELS.filter((l) => levelSatisfies(l, 'L1'))).toEqual(['L0', 'L1']);
    expect(LEVELS.filter((l) => levelSatisfies(l, 'L2'))).toEqual(['L0', 'L1', 'L2']);
  });

  it('is reflexive, antisymmetric and transitive (a total order)', () => {
    fc.assert(
      fc.property(level, level, level, (a, b, c) => {
        expect(levelSatisfies(a, a)).toBe(true);
        if (a !== b) expect(levelSatisfies(a, b) && levelSatisfies(b, a)).toBe(false);
        if (levelSatisfies(a, b) && levelSatisfies(b, c)) expect(levelSatisfies(a, c)).toBe(true);
        expect(levelSatisfies(a, b) || levelSatisfies(b, a)).toBe(true);
      }),
    );
  });

  it('recognises exactly the three levels', () => {
    fc.assert(
      fc.property(fc.string(), (s) => {
        expect(isAgentLevel(s)).toBe((LEVELS as readonly string[]).includes(s));
      }),
    );
  });
});

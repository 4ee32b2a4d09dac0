/**
 * The keyword vocabulary (src/knowledge/search/sqlite/keyword/lexeme-table.ts) against a Map and a list,
 * over any text (non-ASCII, surrogates, long lexemes) and growth past its slots and arrays.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LexemeTable } from '../../../../src/knowledge/search/sqlite/keyword/lexeme-table.js';

describe('LexemeTable', () => {
  it('interns, finds and spells lexemes as a Map and a list do', () => {
    const word = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 12 }),
      fc.string({ unit: fc.constantFrom('a', 'b', 'é', '中'), maxLength: 4 }),
      fc.nat(5000).map((n) => `s${n}`),
    );
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), word), { maxLength: 3000 }), (ops) => {
        const table = new LexemeTable();
        const ids = new Map<string, number>();
        const list: string[] = [];
        for (const [intern, lexeme] of ops) {
          if (intern) {
            let id = ids.get(lexeme);
            if (id === undefined) {
              id = list.length;
              ids.set(lexeme, id);
              list.push(lexeme);
            }
            expect(table.intern(lexeme)).toBe(id);
          } else {
            expect(table.idOf(lexeme)).toBe(ids.get(lexeme) ?? -1);
          }
        }
        expect(table.size).toBe(list.length);
        list.forEach((lexeme, id) => {
          expect(table.lexeme(id)).toBe(lexeme);
          expect(table.idOf(lexeme)).toBe(id);
        });
        expect(table.lexeme(list.length)).toBe('');
        expect(table.lexeme(-1)).toBe('');
      }),
      { numRuns: 60 },
    );
  });

  it('holds a hundred thousand lexemes and one longer than a call’s arguments', () => {
    const table = new LexemeTable();
    for (let i = 0; i < 100_000; i++) expect(table.intern(`w${i}`)).toBe(i);
    const long = 'x'.repeat(200_000) + 'é';
    const id = table.intern(long);
    expect(table.lexeme(id)).toBe(long);
    expect(table.idOf(long)).toBe(id);
    for (let i = 0; i < 100_000; i += 997) expect(table.idOf(`w${i}`)).toBe(i);
    expect(table.idOf('w100000')).toBe(-1);
  });
});

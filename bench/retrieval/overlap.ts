/**
 * How many content words a question shares with its passage: the check that keeps the paraphrase
 * set honest. Two views:
 * - crude: lower-cased words (`queryTerms`) minus `STOP_WORDS`, through a small suffix stemmer;
 *   Jaccard of the two stem sets and the number of shared stems;
 * - porter: the terms SQLite FTS5 itself produces with the product's tokenizer
 *   (`porter unicode61 remove_diacritics 2`), i.e. what BM25 can actually match.
 */
import SqliteDatabase from 'better-sqlite3';
import { queryTerms, STOP_WORDS } from '../../src/knowledge/search/query-terms.js';

const VOWEL = /[aeiouy]/;

/** A deliberately small suffix stemmer (plural, -ing, -ed, -ly, -ness, -ment, -ation …). */
export function crudeStem(word: string): string {
  let w = word.toLowerCase();
  if (w.length <= 3) return w;
  const rules: [string, string][] = [
    ['ational', 'ate'],
    ['ization', 'ize'],
    ['fulness', 'ful'],
    ['iveness', 'ive'],
    ['ations', 'ate'],
    ['ation', 'ate'],
    ['ments', ''],
    ['ment', ''],
    ['ness', ''],
    ['ies', 'y'],
    ['ied', 'y'],
    ['ings', ''],
    ['ing', ''],
    ['edly', ''],
    ['ed', ''],
    ['ly', ''],
    ['sses', 'ss'],
    ['ches', 'ch'],
    ['shes', 'sh'],
    ['xes', 'x'],
    ['es', 'e'],
    ['s', ''],
  ];
  for (const [suffix, replacement] of rules) {
    if (!w.endsWith(suffix)) continue;
    if (suffix === 's' && w.endsWith('ss')) break;
    const stem = w.slice(0, w.length - suffix.length);
    if (stem.length < 3 || !VOWEL.test(stem)) break;
    w = stem + replacement;
    // Undo consonant doubling left by -ing/-ed ("stopped" → "stop"), except ll, ss, zz.
    if ((suffix === 'ing' || suffix === 'ed' || suffix === 'ings') && /([^aeiouylsz])\1$/.test(w))
      w = w.slice(0, -1);
    break;
  }
  // "take"/"taking", "make"/"making": drop a final silent e.
  if (w.length > 3 && w.endsWith('e')) w = w.slice(0, -1);
  return w;
}

/** Stems of the content words (no stop words, no one-letter tokens) of a text. */
export function contentStems(text: string): Set<string> {
  return new Set(
    queryTerms(text)
      .filter((t) => t.length > 1 && !STOP_WORDS.has(t))
      .map(crudeStem),
  );
}

export function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  let shared = 0;
  for (const x of a) if (b.has(x)) shared++;
  const union = a.size + b.size - shared;
  return union === 0 ? 0 : shared / union;
}

export function shared(a: ReadonlySet<string>, b: ReadonlySet<string>): string[] {
  return [...a].filter((x) => b.has(x)).sort();
}

/** Query text as the FTS query builder sees it: content words only (stop words dropped). */
export function contentText(text: string): string {
  return queryTerms(text)
    .filter((t) => t.length > 1 && !STOP_WORDS.has(t))
    .join(' ');
}

/**
 * FTS5 terms of each text with the product's tokenizer, computed in a throw-away in-memory
 * database. Pass queries through `contentText` first, as the product drops stop words.
 */
export function porterTerms(texts: readonly string[]): Set<string>[] {
  const db = new SqliteDatabase(':memory:');
  try {
    db.exec(
      `create virtual table t using fts5(x, tokenize = 'porter unicode61 remove_diacritics 2');
       create virtual table v using fts5vocab(t, 'instance');`,
    );
    const insert = db.prepare('insert into t (rowid, x) values (?, ?)');
    db.transaction(() => {
      texts.forEach((text, i) => insert.run(i + 1, text));
    })();
    const out = texts.map(() => new Set<string>());
    for (const r of db.prepare('select doc, term from v').all() as { doc: number; term: string }[])
      out[r.doc - 1]?.add(r.term);
    return out;
  } finally {
    db.close();
  }
}

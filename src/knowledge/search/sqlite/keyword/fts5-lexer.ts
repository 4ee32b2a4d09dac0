/**
 * The lexemes FTS5 indexes for a text, computed in process: what the `knowledge_chunks_fts`
 * table's tokenizer (`porter unicode61 remove_diacritics 2`) produces, token for token, so an
 * in-process BM25 index scores exactly as FTS5's bm25() does.
 *
 * - ASCII runs (by far the most text) are split and stemmed here: unicode61 keeps ASCII letters
 *   and digits and lower-cases them; FTS5's porter stemmer is the original Porter algorithm
 *   (the `stemmer` package; tested word for word against FTS5) applied to tokens of 3–64 bytes.
 * - Runs with any non-ASCII character, and the few ASCII words where FTS5's stemmer departs
 *   from the algorithm (a double `yy`: FTS5 takes `skyyed` to `sky`, Porter to `skyi`), go to
 *   FTS5 itself, through a private in-memory SQLite
 *   table with the same tokenizer: unicode61's folding, diacritics and letter tables are large
 *   and versioned with SQLite, so they are asked, not copied. Answers are cached.
 */
import Database from 'better-sqlite3';
import { stemmer } from 'stemmer';
import { DEFINED, JOINER } from '../../identifiers.js';
import { LexemeTable } from './lexeme-table.js';

/** The tokenizer of `knowledge_chunks_fts` (migration 0002). */
export const FTS5_TOKENIZE = 'porter unicode61 remove_diacritics 2';

/** Runs of ASCII letters/digits and non-ASCII characters: every FTS5 token lies inside one. */
const RUN = /[0-9A-Za-z\u0080-\u{10ffff}]+/gu;
const NON_ASCII = /[\u0080-\u{10ffff}]/u;

/** identifiers.ts's marks, token characters inside whole identifiers. */
const JOINER_CODE = JOINER.charCodeAt(0);
const DEFINED_CODE = DEFINED.charCodeAt(0);

/** ASCII letters and digits (the other ASCII characters separate tokens). */
const isAlnum = (c: number) =>
  (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);

/** A non-ASCII character other than the two marks of identifier tokens (JOINER, DEFINED). */
const OTHER_THAN_JOINED = /[\u0080-\uDFFF\uE002-\u{10ffff}]/u;
/** A joined run not ended by a mark: FTS5's stemmer may change its end. */
const OPEN_JOINED = /[\uE000\uE001][0-9A-Za-z]+(?![0-9A-Za-z\uE000\uE001])/;

/**
 * Whether a text (or run) has a part that FTS5 itself must tokenize: non-ASCII text, except
 * identifier tokens (ASCII joined and ended by the joiner, identifiers.ts), and `yy`.
 */
const askFts5 = (text: string) =>
  (NON_ASCII.test(text) && (OTHER_THAN_JOINED.test(text) || OPEN_JOINED.test(text))) ||
  /yy/i.test(text);

/** FTS5's porter tokenizer stems tokens of 3 to 64 bytes and passes the others through. */
function stemAscii(word: string): string {
  return word.length < 3 || word.length > 64 ? word : stemmer(word);
}

/** Runs tokenized by FTS5 remembered at most (then the cache starts over). */
const RUNS_CACHE_MAX = 100_000;
/** ASCII words remembered at most: stemming is the costly part of a long text. */
const WORDS_CACHE_MAX = 200_000;

/** Hash of a lower-cased ASCII word, as the scanner computes it char by char. */
function wordHash(word: string): number {
  let hash = 0;
  for (let i = 0; i < word.length; i++) hash = (Math.imul(hash, 31) + word.charCodeAt(i)) | 0;
  return hash;
}

/**
 * Lower-cased ASCII word → lexeme id, looked up straight from a span of the text (no substring,
 * no string hashing): the lookup is most of the cost of indexing a text. Open addressing.
 */
/** A slot from a word hash: mixed, as similar words have nearby polynomial hashes. */
const slotOf = (hash: number, mask: number) =>
  (Math.imul(hash ^ (hash >>> 15), 0x2c1b3c6d) >>> 12) & mask;

class WordTable {
  private readonly slots = 1 << 19;
  /** '' marks a free slot. Filled, not `new Array(n)`: a large holey array is a slow dictionary. */
  private keys: string[] = WordTable.empty(this.slots);
  private readonly hashes = new Int32Array(this.slots);
  private readonly values = new Int32Array(this.slots);
  size = 0;

  private static empty(slots: number): string[] {
    return Array.from({ length: slots }, () => '');
  }

  /** The id of text[start, end) lower-cased, or -1. */
  get(text: string, start: number, end: number, hash: number): number {
    const mask = this.slots - 1;
    for (let slot = slotOf(hash, mask); ; slot = (slot + 1) & mask) {
      const key = this.keys[slot] as string;
      if (key === '') return -1;
      if (this.hashes[slot] !== hash || key.length !== end - start) continue;
      let k = 0;
      while (k < key.length) {
        const c = text.charCodeAt(start + k);
        if ((c >= 0x41 && c <= 0x5a ? c | 0x20 : c) !== key.charCodeAt(k)) break;
        k++;
      }
      if (k === key.length) return this.values[slot] as number;
    }
  }

  set(word: string, hash: number, id: number): void {
    if (this.size >= WORDS_CACHE_MAX) {
      this.keys = WordTable.empty(this.slots);
      this.size = 0;
    }
    const mask = this.slots - 1;
    let slot = slotOf(hash, mask);
    while (this.keys[slot] !== '') slot = (slot + 1) & mask;
    this.keys[slot] = word;
    this.hashes[slot] = hash;
    this.values[slot] = id;
    this.size++;
  }
}

/**
 * Tokenizes as FTS5 does and names every lexeme by a number (its id, stable for the life of the
 * lexer): the keyword index works on ids, so indexing a text costs one cache lookup per word.
 */
export class Fts5Lexer {
  private readonly db: Database.Database;
  private readonly insert: Database.Statement;
  private readonly read: Database.Statement;
  private readonly clear: Database.Statement;
  /** Lexeme → id, and back. Grows with the vocabulary seen (as FTS5's own term dictionary). */
  private readonly vocabulary = new LexemeTable();
  /** Lower-cased ASCII word → lexeme id. */
  private readonly words = new WordTable();
  /** Scratch output of scan(). */
  private buffer = new Int32Array(4096);
  /** Run tokenized by FTS5 → lexeme ids. */
  private readonly runs = new Map<string, number[]>();

  constructor() {
    this.db = new Database(':memory:');
    this.db.exec(
      `create virtual table words using fts5(w, tokenize = '${FTS5_TOKENIZE}');
       create virtual table words_instance using fts5vocab(words, instance);`,
    );
    this.insert = this.db.prepare('insert into words (rowid, w) values (?, ?)');
    this.read = this.db
      .prepare('select doc, term from words_instance order by doc, "offset"')
      .raw();
    this.clear = this.db.prepare('delete from words');
  }

  close(): void {
    this.db.close();
  }

  /** Lexemes known so far: every id is below this. */
  get size(): number {
    return this.vocabulary.size;
  }

  /** The id of a lexeme, or -1 if no text tokenized so far had it. */
  idOf(lexeme: string): number {
    return this.vocabulary.idOf(lexeme);
  }

  lexeme(id: number): string {
    return this.vocabulary.lexeme(id);
  }

  /** The id of a lexeme, given one when it has none (a snapshot's vocabulary is mapped so). */
  intern(lexeme: string): number {
    return this.vocabulary.intern(lexeme);
  }

  /** Bytes the vocabulary holds. */
  get byteLength(): number {
    return this.vocabulary.byteLength;
  }

  /**
   * The lexeme id of text[start, end), `hash` its wordHash: an ASCII word without `yy` (stemmed),
   * or an identifier token, ASCII letters and digits joined and ended by a mark (JOINER,
   * DEFINED: `joined`), which FTS5 lower-cases and its stemmer leaves whole (no suffix rule ends
   * in a mark).
   */
  private wordId(text: string, start: number, end: number, hash: number, joined = false): number {
    let id = this.words.get(text, start, end, hash);
    if (id === -1) {
      const word = text.slice(start, end).toLowerCase();
      id = this.intern(joined ? word : stemAscii(word));
      this.words.set(word, wordHash(word), id);
    }
    return id;
  }

  /** The lexeme ids of a run that FTS5 tokenized (learn() saw it, unless its cache overflowed). */
  private runIds(run: string): number[] {
    let tokens = this.runs.get(run);
    if (tokens === undefined) {
      this.learn([run]);
      tokens = this.runs.get(run) ?? [];
    }
    return tokens;
  }

  /** Tokenizes the not yet cached runs that need FTS5 itself, in one pass. */
  private learn(texts: readonly string[]): void {
    const unknown = new Set<string>();
    for (const text of texts) {
      if (!askFts5(text)) continue;
      for (const run of text.match(RUN) ?? []) {
        if (askFts5(run) && !this.runs.has(run)) unknown.add(run);
      }
    }
    if (unknown.size === 0) return;
    if (this.runs.size + unknown.size > RUNS_CACHE_MAX) this.runs.clear();
    const list = [...unknown];
    const tokens = list.map((): number[] => []);
    this.db.transaction(() => {
      list.forEach((run, i) => this.insert.run(i, run));
      for (const [doc, term] of this.read.iterate() as IterableIterator<[number, string]>) {
        tokens[doc]?.push(this.intern(term));
      }
      this.clear.run();
    })();
    list.forEach((run, i) => this.runs.set(run, tokens[i] ?? []));
  }

  /**
   * The lexeme ids of each text, in order, as FTS5 indexes it (a lexeme repeats as often as its
   * words do). All texts are tokenized in one batch.
   */
  tokenize(texts: readonly string[]): Int32Array[] {
    this.learn(texts);
    return texts.map((text) => this.scan(text));
  }

  /**
   * One pass over the text's UTF-16 units: runs (see RUN) of ASCII letters and digits are
   * looked up while they are read; a run with a non-ASCII unit or a `yy` goes to runIds.
   */
  private scan(text: string): Int32Array {
    let n = 0;
    const len = text.length;
    if (this.buffer.length < len) this.buffer = new Int32Array(len);
    const out = this.buffer;
    let i = 0;
    while (i < len) {
      let c = text.charCodeAt(i);
      if (c < 0x80 && !isAlnum(c)) {
        i++;
        continue;
      }
      const start = i;
      let hash = 0;
      let special = false;
      let joined = false;
      let y = false;
      for (; i < len; i++) {
        c = text.charCodeAt(i);
        if (c === JOINER_CODE || c === DEFINED_CODE) {
          joined = true;
          y = false; // `y⁂y` is no `yy` (askFts5 reads it so)
          hash = (Math.imul(hash, 31) + c) | 0;
          continue;
        }
        if (c >= 0x80) {
          special = true;
          continue;
        }
        if (c >= 0x41 && c <= 0x5a) c |= 0x20;
        else if (!isAlnum(c)) break;
        if (c === 0x79) {
          if (y) special = true;
          y = true;
        } else {
          y = false;
        }
        hash = (Math.imul(hash, 31) + c) | 0;
      }
      if (!special && !joined) {
        out[n++] = this.wordId(text, start, i, hash);
        continue;
      }
      const last = text.charCodeAt(i - 1);
      if (!special && (last === JOINER_CODE || last === DEFINED_CODE)) {
        // An identifier token (identifiers.ts): ended by the joiner, so no stemming applies.
        out[n++] = this.wordId(text, start, i, hash, true);
        continue;
      }
      for (const id of this.runIds(text.slice(start, i))) out[n++] = id;
    }
    return out.slice(0, n);
  }

  /** The lexemes of each text, as strings (see tokenize). */
  lexemes(texts: readonly string[]): string[][] {
    return this.tokenize(texts).map((ids) => Array.from(ids, (id) => this.lexeme(id)));
  }
}

let shared: Fts5Lexer | undefined;

/** The process's lexer (its own in-memory SQLite), made on first use. */
export function sharedLexer(): Fts5Lexer {
  return (shared ??= new Fts5Lexer());
}

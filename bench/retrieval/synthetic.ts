/**
 * Synthetic corpora for latency and memory at scale: seeded, reproducible markdown.
 *
 * Sentences come from a word-bigram chain trained on the paraphrase documents (so they read as
 * plausible English with the same vocabulary), sprinkled with pseudo-words drawn Zipf-like from a
 * pool of 20,000 made-up names: a real corpus has a long tail of rare terms (names, codes), and
 * without one every posting list would be long and keyword search unrealistically slow.
 * Each section is ~1,000 characters (one chunk at the default maxChars of 1400).
 */

/** mulberry32: small, fast, seeded. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const START = '\u0002';
const END = '\u0003';
const SYLLABLES =
  'ka lo mi ren ta vo sel dri an quo bel tor fen ish ul gar ne pim hax zo ru cal ste vin mar ost ley'.split(
    ' ',
  );

export class SentenceGenerator {
  private readonly next = new Map<string, string[]>();
  private readonly names: string[] = [];
  /** Cumulative Zipf weights of `names`. */
  private readonly cumulative: Float64Array;
  readonly vocabulary: number;

  constructor(
    texts: readonly string[],
    private readonly random: () => number,
    nameCount = 20_000,
  ) {
    const vocab = new Set<string>();
    for (const text of texts) {
      // Prose only: headings carry ids (`## P017 …`) that must not leak into synthetic text.
      const prose = text
        .split('\n')
        .filter((l) => !l.startsWith('#'))
        .join('\n');
      for (const sentence of prose.split(/[.!?;:]\s+|\n+/)) {
        const words = sentence.match(/[\p{L}\p{N}][\p{L}\p{N}'’-]*/gu);
        if (words === null || words.length < 3) continue;
        let prev = START;
        for (const raw of words) {
          const w = /^[A-Z][a-z]/.test(raw) && prev === START ? raw.toLowerCase() : raw;
          vocab.add(w);
          this.successors(prev).push(w);
          prev = w;
        }
        this.successors(prev).push(END);
      }
    }
    this.vocabulary = vocab.size;
    const seen = new Set<string>();
    while (this.names.length < nameCount) {
      const parts = 2 + Math.floor(random() * 2);
      let name = '';
      for (let i = 0; i < parts; i++) name += SYLLABLES[Math.floor(random() * SYLLABLES.length)]!;
      if (seen.has(name)) continue;
      seen.add(name);
      this.names.push(name);
    }
    this.cumulative = new Float64Array(nameCount);
    let sum = 0;
    for (let i = 0; i < nameCount; i++) this.cumulative[i] = sum += 1 / (i + 1);
  }

  private successors(word: string): string[] {
    let list = this.next.get(word);
    if (list === undefined) this.next.set(word, (list = []));
    return list;
  }

  private pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.random() * list.length)]!;
  }

  /** A pseudo-word, Zipf-distributed over the pool (a few are common, most are rare). */
  name(): string {
    const total = this.cumulative[this.cumulative.length - 1]!;
    const x = this.random() * total;
    let lo = 0;
    let hi = this.cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.cumulative[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    const n = this.names[lo]!;
    return n[0]!.toUpperCase() + n.slice(1);
  }

  /** Words of one sentence (6..28 words, about 4 % of them pseudo-words). */
  words(): string[] {
    const out: string[] = [];
    let w = this.pick(this.successors(START));
    while (out.length < 28) {
      if (w === END) {
        if (out.length >= 6) break;
        w = this.pick(this.successors(START));
        continue;
      }
      out.push(this.random() < 0.04 ? this.name() : w);
      const list = this.next.get(w);
      w = list === undefined ? END : this.pick(list);
    }
    return out;
  }

  sentence(): string {
    const text = this.words().join(' ');
    return text[0]!.toUpperCase() + text.slice(1) + '.';
  }

  /** `## <id> <title>` and ~`chars` characters of sentences. */
  section(id: string, chars = 950): string {
    const title = this.words().slice(0, 3 + Math.floor(this.random() * 3));
    let body = '';
    while (body.length < chars - 120) body += (body === '' ? '' : ' ') + this.sentence();
    return `## ${id} ${title.join(' ')}\n\n${body}\n`;
  }

  /** A query: a 4–9 word stretch of a fresh sentence, sometimes with a rare name. */
  query(): string {
    const words = this.words();
    const len = Math.min(words.length, 4 + Math.floor(this.random() * 6));
    const start = Math.floor(this.random() * (words.length - len + 1));
    const q = words.slice(start, start + len);
    if (this.random() < 0.3) q.push(this.name());
    return q.join(' ');
  }
}

/** Lazily yields the markdown files of an `n`-section corpus, `perFile` sections each. */
export function* syntheticFiles(
  generator: SentenceGenerator,
  n: number,
  perFile = 5000,
): Generator<{ name: string; markdown: string; sections: number }> {
  for (let first = 0, part = 1; first < n; first += perFile, part++) {
    const count = Math.min(perFile, n - first);
    const sections: string[] = [`# Synthetic corpus part ${part}\n`];
    for (let i = 0; i < count; i++)
      sections.push(generator.section(`S${String(first + i).padStart(6, '0')}`));
    yield {
      name: `synthetic-${String(part).padStart(3, '0')}.md`,
      markdown: sections.join('\n'),
      sections: count,
    };
  }
}

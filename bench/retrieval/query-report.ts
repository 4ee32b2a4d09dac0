/**
 * What bench/retrieval.ts reports per query of a set beside its table (on stderr):
 * - the misses at rank 1 (`EvalSet.reportMisses`): the query, what came first (document ›
 *   section) and where the answer ranked; and how many queries find the answer's own section
 *   first ("exact section first": the first hit is the answering chunk or another chunk of its
 *   section);
 * - padding: how many hits a client asking with the defaults (topK 10, no minScore) gets, per
 *   answerable and unanswerable query, and whether one lost the answer that minScore -1 had in
 *   its top 10 (ranking.ts PADDING_FRACTION).
 */
import type { Hit } from './harness.js';
import type { EvalQuery } from './sets.js';

export class QueryReport {
  private readonly misses: string[] = [];
  private sectionFirst = 0;
  private answerable = 0;
  private readonly asked = { answerable: [] as number[], unanswerable: [] as number[], lost: 0 };

  constructor(
    private readonly label: string,
    /** Document id → file name. */
    private readonly docNames: ReadonlyMap<string, string>,
  ) {}

  private where(hit: Hit): string {
    const section = hit.sectionPath === '' ? '(no heading)' : hit.sectionPath;
    return `${this.docNames.get(hit.documentId) ?? hit.documentId} › ${section}`;
  }

  /** An answerable query's hits (minScore -1), best first, keyed as the set keys them. */
  rankOne(q: EvalQuery, items: readonly Hit[], keyOf: (hit: Hit) => string): void {
    this.answerable++;
    const first = items[0];
    if (first === undefined) {
      this.misses.push(`  ${q.id} [${q.group}] ${JSON.stringify(q.text)}: no hit`);
      return;
    }
    if (q.relevant.has(keyOf(first))) {
      this.sectionFirst++;
      return;
    }
    const ranked = [...new Set(items.map(keyOf))];
    const rank = ranked.findIndex((key) => q.relevant.has(key)) + 1;
    const answer = items.find((hit) => q.relevant.has(keyOf(hit)));
    const sameSection =
      answer !== undefined &&
      answer.documentId === first.documentId &&
      answer.sectionPath !== '' &&
      answer.sectionPath === first.sectionPath;
    if (sameSection) this.sectionFirst++;
    this.misses.push(
      `  ${q.id} [${q.group}] ${JSON.stringify(q.text)} → 1st: ${this.where(first)}; ` +
        (answer === undefined
          ? 'answer not in the top 30'
          : `answer at rank ${rank}: ${this.where(answer)}`),
    );
  }

  /** A query's hits with the defaults (`plain`) beside its hits with minScore -1 (`all`). */
  padding(
    q: EvalQuery,
    all: readonly Hit[],
    plain: readonly Hit[],
    keyOf: (hit: Hit) => string,
  ): void {
    const answerable = q.relevant.size > 0;
    (answerable ? this.asked.answerable : this.asked.unanswerable).push(plain.length);
    const answered = (list: readonly Hit[]) => list.some((hit) => q.relevant.has(keyOf(hit)));
    if (answerable && answered(all.slice(0, 10)) && !answered(plain)) this.asked.lost++;
  }

  /** The report's lines. */
  lines(): string[] {
    const out: string[] = [];
    if (this.answerable > 0) {
      const share = (this.sectionFirst / this.answerable).toFixed(3);
      out.push(
        `${this.label}: ${this.misses.length} of ${this.answerable} queries miss at rank 1`,
        `${this.label}: exact section first ${this.sectionFirst}/${this.answerable} = ${share} ` +
          "(the first hit is the answer or another chunk of the answer's section)",
        ...this.misses,
      );
    }
    const { answerable, unanswerable, lost } = this.asked;
    if (answerable.length + unanswerable.length > 0) {
      const mean = (xs: number[]) =>
        xs.length === 0 ? '–' : (xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(2);
      out.push(
        `${this.label}: a default request (topK 10, no minScore) returns ${mean(answerable)} hits ` +
          `per answerable query (answers lost from the top 10: ${lost}), ` +
          `${mean(unanswerable)} per unanswerable one`,
      );
    }
    return out;
  }
}

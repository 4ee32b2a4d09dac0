/**
 * Hybrid fusion with a real sentence model (bge-small-en-v1.5) through the app: on the judged
 * realdocs questions of five real documents (curl's FAQ and install guide, SQLite's pragmas,
 * zlib's how-to, lz4's manual), hybrid retrieval ranks the answer at least as well as keyword and
 * semantic retrieval alone, overall and on the paraphrased questions (MRR@10). The full measurement
 * is `npx tsx bench/fusion-sweep.ts --model bge-small-en-v1.5` (docs/performance.md).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers.js';
import { KnowledgeClient, knowledgeApp } from '../knowledge/helpers.js';
import { installedModel, MODELS_DIR } from './models.js';
import { answers, FAQ_FILE, judgedQuestions, type JudgedQuestion } from './rerank-data.js';

const MODEL = 'bge-small-en-v1.5';
const DOCS = [
  'curl-faq.txt',
  'curl-install.md',
  'sqlite-pragma.html',
  'zlib-how.html',
  'lz4.1.txt',
];
const MODES = ['keyword', 'semantic', 'hybrid'] as const;

describe(`hybrid fusion with ${MODEL} (judged realdocs questions)`, () => {
  let t: TestApp;
  let k: KnowledgeClient;
  const questions: JudgedQuestion[] = DOCS.flatMap((doc) => judgedQuestions(doc));

  beforeAll(async () => {
    installedModel(MODEL);
    ({ t, k } = await knowledgeApp({
      EMBEDDING_PROVIDER: 'transformers',
      EMBEDDING_MODEL: MODEL,
      EMBEDDING_MODEL_DIR: MODELS_DIR,
    }));
    for (const name of DOCS) {
      const doc = await k.uploadOk(name, readFileSync(join(FAQ_FILE, '..', name)));
      await k.indexOk(doc.id);
    }
  }, 600_000);
  afterAll(async () => {
    await t.close();
  });

  it('ranks answers at least as well as keyword and semantic alone, paraphrases included', async () => {
    expect(questions.length).toBeGreaterThanOrEqual(50);
    const mrr = (mode: (typeof MODES)[number], type?: string) => ({ mode, type, sum: 0, n: 0 });
    const tallies = MODES.flatMap((mode) => [mrr(mode), mrr(mode, 'paraphrase')]);
    for (const question of questions) {
      for (const mode of MODES) {
        const hits = await k.hits({ query: question.question, topK: 10, mode, minScore: -1 });
        const rank = hits.findIndex((hit) => answers(hit.content, question));
        for (const tally of tallies) {
          if (tally.mode !== mode || (tally.type !== undefined && tally.type !== question.type))
            continue;
          tally.n += 1;
          if (rank >= 0) tally.sum += 1 / (rank + 1);
        }
      }
    }
    const of = (mode: string, type?: string) => {
      const tally = tallies.find((x) => x.mode === mode && x.type === type);
      return tally === undefined || tally.n === 0 ? 0 : tally.sum / tally.n;
    };
    console.log(
      `${questions.length} questions, MRR@10 (paraphrased): ` +
        MODES.map((m) => `${m} ${of(m).toFixed(3)} (${of(m, 'paraphrase').toFixed(3)})`).join(', '),
    );
    for (const type of [undefined, 'paraphrase']) {
      expect(of('hybrid', type)).toBeGreaterThanOrEqual(of('keyword', type));
      expect(of('hybrid', type)).toBeGreaterThanOrEqual(of('semantic', type));
    }
    // A sentence model finds what the question says in other words: semantic beats keyword there.
    expect(of('semantic', 'paraphrase')).toBeGreaterThan(of('keyword', 'paraphrase'));
  }, 600_000);
});

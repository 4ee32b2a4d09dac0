/**
 * Korean is written with spaces, but a noun carries its particle in the same word: 데이터를
 * (the data, as object), 데이터는, 데이터의. FTS5's tokenizer keeps the word whole, so a search for
 * 데이터 found none of them. The keyword indexes therefore also read the noun of a Hangul word
 * that ends in a particle (keyword-text.ts), longest particle first; the word itself stays a token,
 * so a query with the particle still matches it exactly. A one-syllable particle is only taken off
 * a word of three syllables or more (사이 is a noun, not 사 + 이). No dictionary: a word that
 * merely ends like a particle gains one extra token, which costs a little precision, never a match.
 */

/** Particles (josa), the longer ones first so that 에서 is taken whole, not as 서. */
const PARTICLES = [
  ...['에서부터', '으로부터', '에게서', '한테서', '이라고', '이라는', '에서는', '에서도', '으로는'],
  ...['에게는', '까지', '부터', '에서', '에게', '한테', '께서', '으로', '처럼', '보다', '마다'],
  ...[
    '조차',
    '라고',
    '라는',
    '이나',
    '이랑',
    '하고',
    '은',
    '는',
    '이',
    '가',
    '을',
    '를',
    '의',
    '에',
  ],
  ...['로', '와', '과', '도', '만', '랑'],
];

const HANGUL_WORD = /[\uAC00-\uD7A3]{2,}/g;
const ANY_HANGUL = /[\uAC00-\uD7A3]/;

/** Pushes onto `out` the noun of each Hangul word of the text that ends in a particle. */
export function koreanNouns(text: string, out: string[]): void {
  if (!ANY_HANGUL.test(text)) return;
  for (const [word] of text.matchAll(HANGUL_WORD)) {
    const particle = PARTICLES.find(
      (p) => word.endsWith(p) && word.length - p.length >= (p.length > 1 ? 1 : 2),
    );
    if (particle !== undefined) out.push(word.slice(0, word.length - particle.length));
  }
}

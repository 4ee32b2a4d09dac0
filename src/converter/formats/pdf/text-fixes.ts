/**
 * Character-level repairs of a PDF's text layer: spacing accents set beside their letter (TeX's
 * `M¨oller`), raw markup that a markdown renderer would swallow (`<!-- … -->`, `<tag>`), and the
 * choice at a line-end hyphen (`organi-zation` joins, `store-conditional` keeps its hyphen),
 * decided by the document's own words. Pure.
 */

/** Spacing accents → the combining mark they stand for. */
const ACCENTS: Record<string, string> = {
  '¨': '\u0308',
  '´': '\u0301',
  ˆ: '\u0302',
  '˜': '\u0303',
  ˇ: '\u030C',
  '˚': '\u030A',
  '¯': '\u0304',
  '˘': '\u0306',
  '˙': '\u0307',
  '˝': '\u030B',
  '¸': '\u0327',
};
const ACCENT_BEFORE = /([¨´ˆ˜ˇ˚¯˘˙˝])\s?(\p{L})/gu;

/**
 * `M¨oller` → `Möller`: a spacing accent right before a letter becomes that letter with the
 * accent, when Unicode has the pair as one character (else the text stays as it was).
 */
export function combineAccents(text: string): string {
  if (!/[¨´ˆ˜ˇ˚¯˘˙˝¸]/u.test(text)) return text;
  return text.replace(ACCENT_BEFORE, (all, accent: string, letter: string) => {
    // TeX sets accented i on a dotless ı.
    const base = letter === 'ı' ? 'i' : letter;
    const combined = `${base}${ACCENTS[accent] ?? ''}`.normalize('NFC');
    return combined.length === 1 ? combined : all;
  });
}

/**
 * Escapes `<` where it would open markup (`<!--`, `<tag`, `</tag`, `<?xml`) so the text shows when
 * the markdown is rendered; `a < b` and `<=` stay as they are.
 */
export function escapeMarkup(text: string): string {
  return text.replace(/<(?=[!?/]|\p{L})/gu, '\\<');
}

const WORD = /\p{L}+(?:-\p{L}+)*/gu;

/** The words of a document (lower case), hyphenated compounds as written inside lines. */
export function vocabulary(lines: readonly string[]): Set<string> {
  const words = new Set<string>();
  for (const line of lines) {
    // A word split at the line end is not a word of the document (the test first: the
    // replacement alone tries every letter of the line as the word's start).
    const text = /-\s*$/.test(line) ? line.replace(/\p{L}+-\s*$/u, '') : line;
    for (const m of text.match(WORD) ?? []) {
      const word = m.toLowerCase();
      words.add(word);
      if (word.includes('-')) for (const part of word.split('-')) words.add(part);
    }
  }
  return words;
}

/**
 * Whether the hyphen between `head-` (end of a line) and `tail` (start of the next) is part of
 * the word: the document writes the compound with a hyphen, or both halves are its words and the
 * joined word is not. Otherwise the layout split one word and the hyphen goes.
 */
export function keepsHyphen(words: ReadonlySet<string>, head: string, tail: string): boolean {
  const [h, t] = [head.toLowerCase(), tail.toLowerCase()];
  if (words.has(h + t)) return false;
  if (words.has(`${h}-${t}`)) return true;
  return h.length >= 2 && t.length >= 2 && words.has(h) && words.has(t);
}

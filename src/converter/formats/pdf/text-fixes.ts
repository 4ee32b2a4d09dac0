/**
 * Character-level repairs of a PDF's text layer: spacing accents set beside their letter (TeX's
 * `M¨oller`), glyphs that are not the characters they look like (ligatures, TeX's `©` drawn as a
 * circle around a `c`, a code font's `ˆ` caret, UTF-8 read as Latin-1), raw markup that a markdown
 * renderer would swallow (`<!-- … -->`, `<tag>`), and the choice at a line-end hyphen
 * (`organi-zation` joins, `store-conditional` keeps its hyphen), decided by the document's own
 * words. Pure.
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
/**
 * A spacing accent and the letter it sits on: right before it, or after one space when the accent
 * is itself inside a word (`M¨ oller`). An accent standing alone (`ˆ u`, `x ˆ 2`) is a character
 * of its own.
 */
const ACCENT_BEFORE = /([¨´ˆ˜ˇ˚¯˘˙˝])(\p{L})|(?<=\p{L})([¨´ˆ˜ˇ˚¯˘˙˝]) (\p{L})/gu;

/**
 * `M¨oller` → `Möller`: a spacing accent right before a letter becomes that letter with the
 * accent, when Unicode has the pair as one character (else the text stays as it was).
 */
export function combineAccents(text: string): string {
  if (!/[¨´ˆ˜ˇ˚¯˘˙˝¸]/u.test(text)) return text;
  return text.replace(ACCENT_BEFORE, (all, a1?: string, l1?: string, a2?: string, l2?: string) => {
    const [accent, letter] = [a1 ?? a2 ?? '', l1 ?? l2 ?? ''];
    // TeX sets accented i on a dotless ı.
    const base = letter === 'ı' ? 'i' : letter;
    const combined = `${base}${ACCENTS[accent] ?? ''}`.normalize('NFC');
    return combined.length === 1 ? combined : all;
  });
}

/** Latin ligatures (U+FB00–FB06: ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ) → their letters, so `ﬁle` is found as `file`. */
const LIGATURE = /[\uFB00-\uFB06]/gu;

/**
 * A run of UTF-8 bytes read as Latin-1 or Windows-1252 (`lÃ¤uft`, `â€™`): a lead byte
 * (Â–ô), then one to three continuation bytes (U+0080–U+00BF, or their Windows-1252 faces).
 */
const MOJIBAKE = /[\u00C2-\u00F4][\u0080-\u00BF€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ]{1,3}/gu;
const CP1252 = '€\u0081‚ƒ„…†‡ˆ‰Š‹Œ\u008DŽ\u008F\u0090‘’“”•–—˜™š›œ\u009DžŸ';

/** The bytes a Latin-1/Windows-1252 reading of `text` came from (null if one is not a byte). */
function latinBytes(text: string): Uint8Array | null {
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const face = CP1252.indexOf(text.charAt(i));
    if (c > 0xff && face < 0) return null;
    bytes[i] = c <= 0xff ? c : 0x80 + face;
  }
  return bytes;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Double-encoded UTF-8 back to its characters: each run that is valid UTF-8 once its characters
 * are taken as bytes (`Ã¤` → `ä`, `â€™` → `’`); anything else (`Ã` alone, `é»`, which is no
 * UTF-8) stays.
 */
export function repairMojibake(text: string): string {
  if (!/[\u00C2-\u00F4]/u.test(text)) return text;
  return text.replace(MOJIBAKE, (run) => {
    const bytes = latinBytes(run);
    if (bytes === null) return run;
    try {
      return UTF8.decode(bytes);
    } catch {
      return run;
    }
  });
}

/**
 * A text run's glyphs that are not the characters they look like: ligatures split into letters,
 * UTF-8 read as Latin-1 decoded. Run by run, before lines collapse their spaces (a no-break space
 * may be a byte of the UTF-8).
 */
export function fixRunText(text: string): string {
  // Run on every text run of a document: most have nothing to repair.
  if (!/[\uFB00-\uFB06\u00C2-\u00F4]/u.test(text)) return text;
  return repairMojibake(text.replace(LIGATURE, (l) => l.normalize('NFKC')));
}

/**
 * A line's glyphs that stand for other characters: TeX's copyright sign, a circle with a `c` set
 * inside it (pdf.js reads `©c`), is one `©`. In a monospaced (code) line TeX's typewriter
 * `circumflex` and `tilde` are the ASCII `^` and `~` a program has; elsewhere spacing accents
 * combine with their letter.
 */
export function fixLineText(text: string, mono = false): string {
  const out = text.includes('©') ? text.replace(/©\s?c(?![\p{L}\p{N}])/gu, '©') : text;
  return mono ? out.replace(/ˆ/g, '^').replace(/˜/g, '~') : combineAccents(out);
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

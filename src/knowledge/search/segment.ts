/**
 * Word boundaries for scripts written without spaces (Chinese, Japanese, Thai, Lao, Khmer,
 * Myanmar), before text reaches either keyword index. FTS5's unicode61 tokenizer (and the
 * PostgreSQL words that copy it) only split at separators, so a whole run of Han characters is one
 * token and "训练数据" is found in no "…的训练数据集…". `Intl.Segmenter` (ICU's dictionary break
 * iterator, built into Node) finds the words; a space between them makes each its own token for
 * both engines, in documents and queries alike.
 *
 * Only runs of those scripts go through the segmenter (it costs ~1 µs a character): text
 * without any such character is returned as it is, after one regular-expression test.
 */

/** Characters of the scripts the segmenter splits into words (plus kana marks such as ー, 々). */
const SCRIPT_CHAR =
  '\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Thai}\\p{Script=Lao}' +
  '\\p{Script=Khmer}\\p{Script=Myanmar}\\u3005\\u3006\\u30fc\\uff70\\u309d\\u309e\\u30fd\\u30fe';
/** A run of those characters, with the combining marks that belong to it (Thai vowels, tones). */
const RUN = new RegExp(`[${SCRIPT_CHAR}][${SCRIPT_CHAR}\\p{M}]*`, 'gu');
const ANY = new RegExp(`[${SCRIPT_CHAR}]`, 'u');

let segmenter: Intl.Segmenter | undefined;

/** Whether the text has a character of a script without spaces (cheap: one regex test). */
export function needsSegmenting(text: string): boolean {
  return ANY.test(text);
}

/** The word-like segments of one run: `[start, end)` offsets within the run. */
export function runWords(run: string): [number, number][] {
  segmenter ??= new Intl.Segmenter(undefined, { granularity: 'word' });
  const words: [number, number][] = [];
  for (const s of segmenter.segment(run)) {
    if (s.isWordLike === true) words.push([s.index, s.index + s.segment.length]);
  }
  return words;
}

/**
 * The text with a space on each side of every word of a run in those scripts (so a run is also
 * cut off from Latin letters or digits it touches: "GPT模型" → "GPT 模型 "). Other text is
 * unchanged; the result is what the keyword indexes read, never what hits show.
 */
export function segmentWords(text: string): string {
  if (!needsSegmenting(text)) return text;
  return text.replace(RUN, (run) => {
    const words = runWords(run);
    if (words.length === 0) return run;
    let out = '';
    let at = 0;
    for (const [start, end] of words) {
      // Whatever lies between words (punctuation the segmenter kept apart) stays in place.
      out += `${run.slice(at, start)} ${run.slice(start, end)} `;
      at = end;
    }
    return out + run.slice(at);
  });
}

const TOKEN_CHAR = /[\p{L}\p{N}\p{Co}]/u;
/** Per BMP unit: 0 not known yet, 1 a token character, 2 a separator. */
const BMP_CLASS = new Uint8Array(0x10000);

/**
 * Whether the code point at text[i] (`c`: its first UTF-16 unit) is a token character (letters,
 * digits, private use).
 */
export function isTokenChar(text: string, i: number, c: number): boolean {
  if (c < 0x80) return (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a);
  if (c >= 0xd800 && c <= 0xdbff)
    return TOKEN_CHAR.test(String.fromCodePoint(text.codePointAt(i) ?? c));
  let k = BMP_CLASS[c] as number;
  if (k === 0) BMP_CLASS[c] = k = TOKEN_CHAR.test(String.fromCharCode(c)) ? 1 : 2;
  return k === 1;
}

/**
 * Pushes the tokens of text[from, to) (unicode61's token characters, a combining mark
 * separating) as offsets into `spans`. A scan, not a regular expression: highlights run it over
 * every hit.
 */
function pushTokens(text: string, from: number, to: number, spans: [number, number][]): void {
  let start = -1;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (isTokenChar(text, i, c)) {
      if (start < 0) start = i;
    } else if (start >= 0) {
      spans.push([start, i]);
      start = -1;
    }
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < to) i++;
  }
  if (start >= 0) spans.push([start, to]);
}

/**
 * The offsets `[start, end)` of the tokens the keyword indexes read in the text, in order, as
 * segmentWords and then unicode61 cut it: runs of letters, digits and private-use characters (a
 * combining mark separates, as there), a run in those scripts cut at its segmenter words. Used
 * for highlights: each span of the original text is one token of its segmented form.
 */
export function wordSpans(text: string): [number, number][] {
  const spans: [number, number][] = [];
  if (!needsSegmenting(text)) {
    pushTokens(text, 0, text.length, spans);
    return spans;
  }
  let at = 0;
  for (const m of text.matchAll(RUN)) {
    // Text between words joins what precedes it (segmentWords puts no space there).
    for (const [start, end] of runWords(m[0])) {
      pushTokens(text, at, m.index + start, spans);
      pushTokens(text, m.index + start, m.index + end, spans);
      at = m.index + end;
    }
  }
  pushTokens(text, at, text.length, spans);
  return spans;
}

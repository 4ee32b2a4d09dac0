/**
 * Frozen copy, as of migration 0013, of the word cutting in knowledge/search/segment.ts
 * (needsSegmenting, segmentWords). Migrations import nothing from knowledge/: editing the live
 * code must never change what an old migration writes. Do not edit to follow the live code; a
 * new segmentation is a new migration.
 *
 * Word boundaries for scripts written without spaces (Chinese, Japanese, Thai, Lao, Khmer,
 * Myanmar): `Intl.Segmenter` (ICU's dictionary break iterator, built into Node) finds the words;
 * a space between them makes each its own token for both keyword indexes.
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
function runWords(run: string): [number, number][] {
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

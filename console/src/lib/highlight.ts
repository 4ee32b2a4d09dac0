/** A hit's passage cut into plain and marked segments, from the hit's `highlights` offsets. */

export interface Segment {
  text: string;
  marked: boolean;
}

export interface Range {
  start: number;
  end: number;
}

/**
 * Splits `content` at the ranges (UTF-16 offsets, `end` exclusive). Ranges out of order, out of
 * bounds, empty or overlapping are clamped and merged, so a bad range never loses or repeats text:
 * the segments always join back to `content`.
 */
export function highlightSegments(content: string, ranges: readonly Range[]): Segment[] {
  const sorted = ranges
    .map(({ start, end }) => ({
      start: Math.max(0, Math.min(start, content.length)),
      end: Math.max(0, Math.min(end, content.length)),
    }))
    .filter(({ start, end }) => end > start)
    .sort((a, b) => a.start - b.start);
  const segments: Segment[] = [];
  let at = 0;
  for (const { start, end } of sorted) {
    if (end <= at) continue;
    const from = Math.max(start, at);
    if (from > at) segments.push({ text: content.slice(at, from), marked: false });
    const last = segments.at(-1);
    if (last?.marked === true && from === at) last.text += content.slice(from, end);
    else segments.push({ text: content.slice(from, end), marked: true });
    at = end;
  }
  if (at < content.length) segments.push({ text: content.slice(at), marked: false });
  return segments;
}

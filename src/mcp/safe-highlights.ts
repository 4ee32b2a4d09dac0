/**
 * Where `**` may go in a passage of markdown: the highlight ranges of a hit made safe to mark, so
 * the marked passage renders the same text as the unmarked one, only emphasised. Pure; a property
 * test renders both with a markdown parser (test/unit/mcp/safe-highlights.test.ts).
 *
 * - Never inside a fenced or indented code block, an HTML block, comment or tag, or emphasis
 *   (such a highlight is left unmarked: the passage shows it as it is).
 * - A highlight touching an inline code span, a link or an image covers it whole (`**`x`**`).
 * - A range starts and ends on a letter or digit (a delimiter run next to punctuation would not
 *   open or close emphasis); one next to `*`, `_`, `~` or a backtick, or a covered code span or
 *   link glued to a word, is left unmarked.
 * - Matches separated only by spaces merge into one (`**pump impeller**`).
 */

export interface Range {
  start: number;
  end: number;
}

interface Zone extends Range {
  /** `wrap`: a highlight may cover it whole; `skip`: nothing inside is marked. */
  kind: 'wrap' | 'skip';
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const EMPHASIS =
  /(\*\*|__)(?=\S)[\s\S]*?\S\1|(?<![\w*])\*(?=[^\s*])[^*\n]*?[^\s*]\*(?!\*)|(?<![\w_])_(?=[^\s_])[^_\n]*?[^\s_]_(?!\w)/g;
const HTML = /<!--[\s\S]*?(?:-->|$)|<\/?[A-Za-z][^<>]*>|<[a-z]+:[^<>\s]*>/g;

/** A line that opens an HTML block (raw to the next blank line). */
const HTML_BLOCK = /^ {0,3}<[A-Za-z/!?]/;
/** List markers and block quotes before a line's content. */
const CONTAINERS = /^(?: {0,3}(?:[-*+]|\d{1,9}[.)])[ \t]+| {0,3}>[ \t]?)+/;

/** A line without its list markers and quote marks (a block may open inside them). */
const contentOf = (line: string) => line.replace(CONTAINERS, '');

/** Fenced and indented code blocks and HTML blocks, by lines. */
function blockZones(text: string, zones: Zone[]): void {
  let at = 0;
  let fence: string | null = null;
  let fenceStart = 0;
  let previousBlank = true;
  let indentedStart = -1;
  let htmlStart = -1;
  while (at <= text.length) {
    const newline = text.indexOf('\n', at);
    const end = newline === -1 ? text.length : newline;
    const line = text.slice(at, end);
    const blank = line.trim() === '';
    if (htmlStart !== -1 && blank) {
      zones.push({ start: htmlStart, end: at, kind: 'skip' });
      htmlStart = -1;
    }
    if (htmlStart !== -1) {
      // Inside an HTML block: raw until a blank line.
    } else if (fence !== null) {
      const close = FENCE.exec(contentOf(line))?.[1];
      if (
        close !== undefined &&
        close[0] === fence[0] &&
        close.length >= fence.length &&
        contentOf(line).trim() === close
      ) {
        zones.push({ start: fenceStart, end, kind: 'skip' });
        fence = null;
      }
    } else {
      const open = FENCE.exec(contentOf(line));
      if (indentedStart !== -1 && !blank && !/^( {4}|\t)/.test(line)) {
        zones.push({ start: indentedStart, end: at, kind: 'skip' });
        indentedStart = -1;
      }
      if (open?.[1] !== undefined) {
        fence = open[1];
        fenceStart = at;
      } else if (indentedStart === -1 && HTML_BLOCK.test(contentOf(line))) {
        htmlStart = at;
      } else if (indentedStart === -1 && previousBlank && /^( {4}|\t)/.test(line) && !blank) {
        indentedStart = at;
      }
    }
    previousBlank = blank;
    if (newline === -1) break;
    at = newline + 1;
  }
  if (fence !== null) zones.push({ start: fenceStart, end: text.length, kind: 'skip' });
  if (htmlStart !== -1) zones.push({ start: htmlStart, end: text.length, kind: 'skip' });
  if (indentedStart !== -1) zones.push({ start: indentedStart, end: text.length, kind: 'skip' });
}

/** Inline code spans: a run of n backticks to the next run of exactly n. */
function codeSpans(text: string, zones: Zone[]): void {
  let at = 0;
  for (;;) {
    const open = text.indexOf('`', at);
    if (open === -1) return;
    let n = open;
    while (text[n] === '`') n++;
    const run = n - open;
    let search = n;
    let close = -1;
    for (;;) {
      const next = text.indexOf('`', search);
      if (next === -1) break;
      let m = next;
      while (text[m] === '`') m++;
      if (m - next === run) {
        close = m;
        break;
      }
      search = m;
    }
    if (close === -1) {
      at = n;
      continue;
    }
    zones.push({ start: open, end: close, kind: 'wrap' });
    at = close;
  }
}

/** `[text](target)` and `![alt](target)`, brackets and parentheses balanced on one line. */
function links(text: string, zones: Zone[]): void {
  for (let i = text.indexOf('['); i !== -1; i = text.indexOf('[', i + 1)) {
    let depth = 0;
    let j = i;
    for (; j < text.length && text[j] !== '\n'; j++) {
      if (text[j] === '[') depth++;
      else if (text[j] === ']' && --depth === 0) break;
    }
    if (text[j] !== ']' || text[j + 1] !== '(') continue;
    let k = j + 1;
    depth = 0;
    for (; k < text.length && text[k] !== '\n'; k++) {
      if (text[k] === '(') depth++;
      else if (text[k] === ')' && --depth === 0) break;
    }
    if (text[k] !== ')') continue;
    const start = i > 0 && text[i - 1] === '!' ? i - 1 : i;
    zones.push({ start, end: k + 1, kind: 'wrap' });
  }
}

function regexZones(text: string, pattern: RegExp, kind: Zone['kind'], zones: Zone[]): void {
  for (const match of text.matchAll(pattern)) {
    zones.push({ start: match.index, end: match.index + match[0].length, kind });
  }
}

/** Every zone of a passage. */
export function zonesOf(text: string): Zone[] {
  const zones: Zone[] = [];
  blockZones(text, zones);
  codeSpans(text, zones);
  links(text, zones);
  regexZones(text, HTML, 'skip', zones);
  regexZones(text, EMPHASIS, 'skip', zones);
  return zones;
}

const isWordChar = (c: string | undefined) => c !== undefined && /[\p{L}\p{N}]/u.test(c);
const DELIMITERS = new Set(['*', '_', '~', '`']);

const overlaps = (a: Range, b: Range) => a.start < b.end && b.start < a.end;

/**
 * The highlight ranges of `text` that may be marked with `**`: sorted, merged, none in a code
 * block, comment, tag or emphasis, inline code and links covered whole, adjacent ones joined.
 */
export function markableRanges(text: string, ranges: readonly Range[]): Range[] {
  const zones = zonesOf(text);
  const out: Range[] = [];
  for (const raw of ranges) {
    let start = Math.max(0, raw.start);
    let end = Math.min(text.length, raw.end);
    while (start < end && !isWordChar(text[start])) start++;
    while (end > start && !isWordChar(text[end - 1])) end--;
    if (end <= start) continue;
    const range = { start, end };
    // Cover the code spans and links it touches, until nothing more is touched.
    let grown = true;
    while (grown) {
      grown = false;
      for (const zone of zones) {
        if (zone.kind === 'wrap' && overlaps(range, zone)) {
          if (zone.start < range.start || zone.end > range.end) grown = true;
          range.start = Math.min(range.start, zone.start);
          range.end = Math.max(range.end, zone.end);
        }
      }
    }
    if (zones.some((zone) => zone.kind === 'skip' && overlaps(range, zone))) continue;
    const before = text[range.start - 1];
    const after = text[range.end];
    if (DELIMITERS.has(before ?? '') || DELIMITERS.has(after ?? '')) continue;
    // `**` before punctuation opens only after a space or punctuation (and closes likewise).
    if (!isWordChar(text[range.start]) && isWordChar(before)) continue;
    if (!isWordChar(text[range.end - 1]) && isWordChar(after)) continue;
    out.push(range);
  }
  out.sort((a, b) => a.start - b.start);
  const merged: Range[] = [];
  for (const r of out) {
    const last = merged.at(-1);
    if (
      last !== undefined &&
      (r.start <= last.end || /^[ \t]+$/.test(text.slice(last.end, r.start)))
    ) {
      last.end = Math.max(last.end, r.end);
    } else merged.push({ ...r });
  }
  return merged;
}

// Pure, deterministic, markdown-aware chunker (upload → markdown → chunk → embed → retrieve).
//
// Guarantees (checked by test/knowledge/chunking/markdown-chunker.test.ts):
// - Body: the input with every page-marker line (a line matching PAGE_MARKER_PATTERN, with its
//   "\n") removed. Markers are recognised everywhere, even inside code fences: they belong to the
//   converter's protocol, not to the document, and must never reach a chunk.
// - Offsets: each chunk is a body range; startOffset/endOffset (end exclusive) are that range
//   mapped back to the ORIGINAL string, so content === markdown.slice(startOffset, endOffset) with
//   the marker lines inside it removed (plain equality when none lies inside). content is never
//   empty and never starts or ends with whitespace (String.prototype.trim semantics).
// - Lengths are UTF-16 code units: content.length <= maxChars, and no chunk starts or ends
//   between the two halves of a surrogate pair.
// - Coverage: every non-whitespace body character lies in at least one chunk.
// - Sections: a chunk never crosses an ATX heading line, so chunks of different sections never
//   overlap; a section's first chunk starts at its heading line. Except: a section that is only
//   its heading (nothing but whitespace and page markers before the next heading) is joined to
//   the next section when that one is deeper (`# 2. Usage` right above `## 2.1 Name`); the chunk
//   then takes the deeper section's path and level. A chunk that is still only headings (a last
//   section, a sibling follows, or the block after it fits maxChars but not with it) is marked
//   `metadata.kind: 'heading'`.
// - sectionPath: the heading titles with markdown escapes removed (`XML_ParserCreate`, not
//   `XML\_ParserCreate`); content keeps the markdown as it is.
// - kind 'toc': a chunk whose lines are mostly table-of-contents or index entries (dot leaders
//   with a page number, or lines of nothing but in-page links); see TOC_ENTRY.
// - Overlap (in body positions): for consecutive chunks A, B of one section, B starts at the
//   first word start (a non-whitespace char preceded by whitespace) at or after
//   max(A.end - overlapChars, A.start + 1, shift), or at the first non-whitespace char after A.end
//   when no such word start lies before A.end (always so when overlapChars is 0). `shift` is 0
//   unless B's first unit (a word, a table row or code block that fits maxChars, or a line of a
//   larger code block) would not fit after the overlap: then shift = unitEnd - maxChars, giving up
//   overlap rather than splitting that unit. Hence 0 <= overlap <= overlapChars, always.
// - Never splits: a word, a table row (a line starting with `|`) or a fenced code block that fits
//   in maxChars; a larger code block only at line ends unless one of its lines is too long.
// - page: page in force at the chunk's first char (pageEnd: at its last char); text before the
//   first marker is page 1; null when the document has no markers. A chunk spans a page start
//   (page < pageEnd) only where a heading alone at the end of a page is joined to the text after
//   it: otherwise pages are hard boundaries, like headings.
// - tokenEstimate = max(ceil(length / 4), ceil(words * 4 / 3)): ~4 chars per token for prose and
//   ~0.75 words per token, taking the larger so code/URLs and short-word text are not under-counted.

import { PAGE_MARKER_PATTERN } from '../../converter/contract.js';
import {
  isToc,
  joinHeadingOnly,
  onlyHeadings,
  type Section,
  ZONE_ATOMIC,
  ZONE_BIG_CODE,
  ZONE_HEADINGS,
} from './chunk-sections.js';
import { unescapeInline } from './markdown-text.js';

export interface ChunkOptions {
  maxChars: number;
  overlapChars: number;
}

export interface Chunk {
  chunkIndex: number;
  content: string;
  sectionPath: string;
  page: number | null;
  tokenEstimate: number;
  metadata: {
    startOffset: number;
    endOffset: number;
    pageEnd?: number | null;
    headingLevel?: number;
    /** 'toc': table-of-contents or index entries; 'heading': nothing but heading lines. */
    kind?: 'toc' | 'heading';
  };
}

// Same set as JS `\s` / String.prototype.trim, so "whitespace" means the same thing everywhere.
// A lookup table because this runs for nearly every character of multi-megabyte inputs.
const WS_TABLE = new Uint8Array(0x10000).fill(1, 0x2000, 0x200b);
for (const c of [
  9, 10, 11, 12, 13, 32, 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff,
])
  WS_TABLE[c] = 1;
const isWs = (c: number): boolean => WS_TABLE[c] === 1; // NaN (past the end) -> false
const isHigh = (c: number): boolean => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number): boolean => c >= 0xdc00 && c <= 0xdfff;

/** Index of the last element of `xs` (sorted ascending) that is <= x, or -1. */
function lastLe(xs: readonly number[], x: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((xs[mid] ?? 0) <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

interface Body {
  text: string;
  segBody: number[]; // body offset where each kept run of the original starts…
  segOrig: number[]; // …and the matching original offset
  pageAt: number[]; // body offsets where a page starts…
  pageNo: number[]; // …and its number
  hasMarkers: boolean;
}

function stripMarkers(md: string): Body {
  const parts: string[] = [];
  const body: Body = {
    text: '',
    segBody: [],
    segOrig: [],
    pageAt: [],
    pageNo: [],
    hasMarkers: false,
  };
  let bodyLen = 0;
  let keptFrom = 0;
  const keep = (to: number): void => {
    if (to <= keptFrom) return;
    parts.push(md.slice(keptFrom, to));
    body.segBody.push(bodyLen);
    body.segOrig.push(keptFrom);
    bodyLen += to - keptFrom;
  };
  for (let line = 0; line < md.length;) {
    const nl = md.indexOf('\n', line);
    const end = nl === -1 ? md.length : nl;
    const next = nl === -1 ? md.length : nl + 1;
    let i = line;
    while (i < end && (md.charCodeAt(i) === 32 || md.charCodeAt(i) === 9)) i++;
    // Cheap pre-check so the regex only runs on candidate lines of a large document.
    if (md.startsWith('<!--', i)) {
      const text = md.slice(line, end);
      const m = PAGE_MARKER_PATTERN.exec(text.endsWith('\r') ? text.slice(0, -1) : text);
      if (m) {
        keep(line);
        body.pageAt.push(bodyLen);
        body.pageNo.push(Number(m[1]));
        body.hasMarkers = true;
        keptFrom = next;
      }
    }
    line = next;
  }
  keep(md.length);
  body.text = parts.length === 1 ? (parts[0] ?? '') : parts.join('');
  return body;
}

const HEADING = /^(#{1,6})(?=[ \t\r]|$)(.*)$/s; // `s`: the line may end with \r

/** One pass over the body lines: sections by ATX headings (outside fences) and split zones. */
function parse(text: string, maxChars: number): { sections: Section[]; zones: Uint8Array } {
  const zones = new Uint8Array(text.length + 1);
  const sections: Section[] = [{ start: 0, end: text.length, path: '', level: 0, heading: false }];
  const trail: { level: number; text: string }[] = [];
  const lastNonWs = (from: number, to: number): number => {
    while (to > from && isWs(text.charCodeAt(to - 1))) to--;
    return to;
  };
  const mark = (a: number, b: number): void => {
    zones.fill(b - a <= maxChars ? ZONE_ATOMIC : ZONE_BIG_CODE, a + 1, b);
  };
  let fence: { ch: number; len: number; start: number } | null = null;
  for (let line = 0; line < text.length;) {
    const nl = text.indexOf('\n', line);
    const end = nl === -1 ? text.length : nl;
    const next = nl === -1 ? text.length : nl + 1;
    let i = line;
    while (i < end && (text.charCodeAt(i) === 32 || text.charCodeAt(i) === 9)) i++;
    const c = text.charCodeAt(i);
    let run = 0;
    while (i - line <= 3 && (c === 96 || c === 126) && text.charCodeAt(i + run) === c) run++;
    if (fence) {
      // A closing fence: same char, at least as long, nothing but whitespace after it.
      if (c === fence.ch && run >= fence.len && lastNonWs(i, end) === i + run) {
        mark(fence.start, i + run);
        fence = null;
      }
    } else if (run >= 3 && !(c === 96 && text.slice(i + run, end).includes('`'))) {
      fence = { ch: c, len: run, start: i };
    } else if (i - line <= 3 && c === 35) {
      const m = HEADING.exec(text.slice(i, end));
      if (m) {
        const level = (m[1] ?? '').length;
        const title = unescapeInline(
          (' ' + (m[2] ?? '')).replace(/[ \t\r]+#+[ \t\r]*$/, '').trim(),
        );
        while ((trail[trail.length - 1]?.level ?? 0) >= level) trail.pop();
        trail.push({ level, text: title });
        const prev = sections[sections.length - 1];
        if (prev) prev.end = line;
        const path = trail
          .map((t) => t.text)
          .filter((t) => t !== '')
          .join(' > ');
        sections.push({ start: line, end: text.length, path, level, heading: true });
      }
    } else if (c === 124) {
      const b = lastNonWs(i, end);
      if (b - i <= maxChars) zones.fill(ZONE_ATOMIC, i + 1, b); // oversized rows split like prose
    }
    line = next;
  }
  if (fence) mark(fence.start, lastNonWs(fence.start, text.length)); // unclosed: runs to the end
  return { sections, zones };
}

// Break classes for a chunk ending at e (text[e-1] is its last char). >= 11 are "clean" breaks:
// 14 blank line, 13 line end, 12 sentence end, 11 other whitespace. 2 = whitespace inside a line
// of a big code block, 1 = inside a word, 0 = forbidden.
const CLEAN = 11;

/** Splits one section [start, end) of the body into chunk ranges [s, e). */
function splitSection(
  text: string,
  zones: Uint8Array,
  start: number,
  end: number,
  { maxChars, overlapChars }: ChunkOptions,
  emit: (s: number, e: number) => void,
): void {
  const ws = (i: number): boolean => isWs(text.charCodeAt(i));
  while (start < end && ws(start)) start++;
  while (end > start && ws(end - 1)) end--;
  const classify = (e: number): number => {
    if (e >= end) return 15; // the section's end is always the best break
    const p = text.charCodeAt(e - 1);
    const c = text.charCodeAt(e);
    if (isWs(p) || zones[e] === ZONE_ATOMIC || zones[e] === ZONE_HEADINGS) return 0;
    if (!isWs(c)) return isHigh(p) && isLow(c) ? 0 : 1;
    let newlines = 0;
    for (let k = e; k < end && newlines < 2 && ws(k); k++)
      if (text.charCodeAt(k) === 10) newlines++;
    if (newlines > 0) return 12 + newlines;
    if (zones[e] === ZONE_BIG_CODE) return 2;
    return p === 46 || p === 33 || p === 63 ? 12 : 11;
  };
  // First word start in [p, limit), else -1; never mid-word, so overlap text starts cleanly.
  const wordStart = (p: number, limit: number): number => {
    if (p > start && !ws(p - 1)) while (p < limit && !ws(p)) p++;
    while (p < limit && ws(p)) p++;
    return p < limit ? p : -1;
  };

  let prevStart = -1;
  let prevEnd = -1;
  for (let piece = start; piece < end;) {
    let s = piece;
    if (prevEnd >= 0 && overlapChars > 0) {
      const w = wordStart(Math.max(prevEnd - overlapChars, prevStart + 1), prevEnd);
      if (w >= 0) s = w;
    }
    let e = -1;
    for (;;) {
      const limit = Math.min(end, s + maxChars);
      if (limit === end) {
        e = end;
        break;
      }
      // Prefer a break in the upper half of the new text so chunks are not needlessly small.
      const lo = piece + Math.floor((limit - piece) / 2);
      // Per tier (minimum class): best end in the upper half, best and latest in the lower half.
      const tiers = [CLEAN, 2, 1].map((min) => ({
        min,
        up: -1,
        upV: 0,
        low: -1,
        lowV: 0,
        lowLast: -1,
      }));
      // The lower half only matters when the upper half has no clean break: skip it otherwise.
      for (let k = limit; k > piece && (k > lo || tiers[0]?.up === -1); k--) {
        const v = classify(k);
        for (const t of tiers) {
          if (v < t.min) continue;
          if (k > lo) {
            if (v > t.upV) Object.assign(t, { up: k, upV: v });
          } else {
            if (t.lowLast < 0) t.lowLast = k;
            if (v > t.lowV) Object.assign(t, { low: k, lowV: v });
          }
        }
      }
      let shifted = false;
      for (const t of tiers) {
        if (t.up >= 0) e = t.up;
        else if (t.min > 1) {
          // The unit straddling `limit` starts after the last lower break. If it fits a chunk on its
          // own, end before it (or, if it is first, give up overlap so it fits); else split it.
          let u0 = t.lowLast;
          if (u0 < 0) u0 = piece;
          else while (ws(u0)) u0++;
          let u1 = -1;
          for (let k = Math.max(limit, u0) + 1; k <= Math.min(end, u0 + maxChars) && u1 < 0; k++)
            if (classify(k) >= t.min) u1 = k;
          if (u1 < 0) continue;
          if (t.low >= 0) e = t.low;
          else {
            const w = wordStart(u1 - maxChars, prevEnd);
            s = w >= 0 ? w : piece;
            shifted = true;
          }
        } else e = t.low; // the upper half has no allowed end at all (e.g. only whitespace)
        break;
      }
      if (shifted) continue;
      if (e < 0) e = isLow(text.charCodeAt(limit)) ? limit - 1 : limit; // last resort: hard cut
      break;
    }
    emit(s, e);
    prevStart = s;
    prevEnd = e;
    piece = e;
    while (piece < end && ws(piece)) piece++;
  }
}

function countWords(s: string): number {
  let n = 0;
  for (let i = 0, inWord = false; i < s.length; i++) {
    const w = !isWs(s.charCodeAt(i));
    if (w && !inWord) n++;
    inWord = w;
  }
  return n;
}

/**
 * Page starts are hard boundaries, like headings: a chunk never spans two pages (except a table
 * row or code block that fits and holds a marker), so a hit's `page` is the page its text is on.
 * A section cut by a page goes on, with the same path, after it.
 */
function splitAtPages(
  sections: Section[],
  pageAt: readonly number[],
  zones: Uint8Array,
): Section[] {
  if (pageAt.length === 0) return sections;
  const out: Section[] = [];
  for (const sec of sections) {
    let part = sec;
    for (let i = Math.max(0, lastLe(pageAt, sec.start)); i < pageAt.length; i++) {
      const p = pageAt[i] ?? 0;
      if (p >= sec.end) break;
      // A marker inside a table row or a code block that fits does not cut that unit.
      if (p > part.start && zones[p] !== ZONE_ATOMIC) {
        out.push({ ...part, end: p });
        part = { ...sec, start: p, heading: false };
      }
    }
    out.push(part);
  }
  return out;
}

export function chunkMarkdown(markdown: string, options: ChunkOptions): Chunk[] {
  const { maxChars, overlapChars } = options;
  if (!Number.isInteger(maxChars) || maxChars < 200 || maxChars > 8000)
    throw new RangeError(`maxChars must be an integer in 200..8000, got ${maxChars}`);
  if (
    !Number.isInteger(overlapChars) ||
    overlapChars < 0 ||
    overlapChars > Math.floor(maxChars / 2)
  )
    throw new RangeError(
      `overlapChars must be an integer in 0..${Math.floor(maxChars / 2)}, got ${overlapChars}`,
    );

  const body = stripMarkers(markdown);
  const { text } = body;
  const parsed = parse(text, maxChars);
  const { zones } = parsed;
  const sections = joinHeadingOnly(
    text,
    zones,
    splitAtPages(parsed.sections, body.pageAt, zones),
    maxChars,
  );
  const toOrig = (b: number): number => {
    const i = Math.max(0, lastLe(body.segBody, b));
    return (body.segOrig[i] ?? 0) + b - (body.segBody[i] ?? 0);
  };
  const pageOf = (b: number): number | null =>
    body.hasMarkers ? (body.pageNo[lastLe(body.pageAt, b)] ?? 1) : null;

  const chunks: Chunk[] = [];
  for (const sec of sections) {
    splitSection(text, zones, sec.start, sec.end, options, (s, e) => {
      const content = text.slice(s, e);
      const kind = onlyHeadings(text, zones, s, e) ? 'heading' : isToc(content) ? 'toc' : undefined;
      chunks.push({
        chunkIndex: chunks.length,
        content,
        sectionPath: sec.path,
        page: pageOf(s),
        tokenEstimate: Math.max(
          Math.ceil(content.length / 4),
          Math.ceil((countWords(content) * 4) / 3),
        ),
        metadata: {
          startOffset: toOrig(s),
          endOffset: toOrig(e - 1) + 1, // e-1 is a content char, so it maps into a kept run
          pageEnd: pageOf(e - 1),
          ...(sec.level > 0 ? { headingLevel: sec.level } : {}),
          ...(kind === undefined ? {} : { kind }),
        },
      });
    });
  }
  return chunks;
}

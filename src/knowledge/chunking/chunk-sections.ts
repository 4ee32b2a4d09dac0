/**
 * Sections of the chunker (markdown-chunker.ts): the split zones it marks, a heading-only section
 * joined to the deeper section after it, and the kinds a chunk can be marked with (`heading`:
 * nothing but heading lines; `toc`: mostly table-of-contents or index entries).
 */

export interface Section {
  start: number;
  end: number;
  path: string;
  level: number; // 0 before the first heading
  heading: boolean; // starts at its heading line (false: the part after a page start)
}

export const HEADING_LINE = /^ {0,3}#{1,6}(?:[ \t\r]|$)/;
export const ZONE_ATOMIC = 1; // strictly inside a table row / code block that fits: no chunk may end here
export const ZONE_BIG_CODE = 2; // strictly inside a code block too big for one chunk: prefer line ends
export const ZONE_HEADINGS = 3; // inside headings joined to the section after them: no chunk may end here

/**
 * Whether every non-blank line that [start, end) touches is an ATX heading line (outside code:
 * a line in a fence has a code zone at its start), from the start of the line holding `start`.
 */
export function onlyHeadings(text: string, zones: Uint8Array, start: number, end: number): boolean {
  let any = false;
  for (let line = text.lastIndexOf('\n', start - 1) + 1; line < end;) {
    const nl = text.indexOf('\n', line);
    const next = nl === -1 ? text.length : nl + 1;
    const content = text.slice(line, Math.min(next, end));
    if (content.trim() !== '') {
      const code = zones[line] === ZONE_ATOMIC || zones[line] === ZONE_BIG_CODE;
      if (code || !HEADING_LINE.test(text.slice(line, next))) return false;
      any = true;
    }
    line = next;
  }
  return any;
}

/**
 * A section that is only its heading goes with the section after it, when that one is deeper or
 * is the same section going on after a page start: a heading is never left alone above its
 * subsections or at the foot of a page. Blank parts (no chunks) are dropped.
 */
export function joinHeadingOnly(
  text: string,
  zones: Uint8Array,
  sections: readonly Section[],
  maxChars: number,
): Section[] {
  const out: Section[] = [];
  const blank = (s: Section) => text.slice(s.start, s.end).trim() === '';
  for (const sec of sections) {
    if (blank(sec)) continue;
    const prev = out[out.length - 1];
    // The joined headings stay in one chunk (an atomic zone), so they must fit one.
    let runEnd = sec.start;
    if (sec.heading) {
      const nl = text.indexOf('\n', sec.start);
      runEnd = nl === -1 ? text.length : nl;
      while (runEnd > sec.start && /\s/.test(text.charAt(runEnd - 1))) runEnd--;
    }
    const joins =
      prev !== undefined &&
      prev.heading &&
      onlyHeadings(text, zones, prev.start, prev.end) &&
      (sec.heading ? sec.level > prev.level : sec.path === prev.path) &&
      runEnd - prev.start <= maxChars;
    if (prev === undefined || !joins) {
      out.push(sec);
      continue;
    }
    if (sec.heading) zones.fill(ZONE_HEADINGS, prev.start + 1, runEnd);
    out[out.length - 1] = { ...sec, start: prev.start, heading: true };
  }
  return out;
}

/**
 * A table-of-contents or index entry: a dot leader ending in a page number (`Introduction . . . 1`,
 * `aes_encrypt........23`; the PDF converter writes the leader as one ` … `), or a line that is
 * nothing but links into the document itself (a list item, or an HTML index's table row).
 */
const TOC_ENTRY = /(?:(?:\.[ \t]?){4,}|[ \t]…[ \t])[ \t]*(?:\d+|[ivxlcdm]+)\b/giu;
const IN_PAGE_LINK = /\[(?:[^\]\n\\]|\\.)*\]\(#[^)\s]*(?:\s+"[^"\n]*")?\)/g;
const linksOnly = (line: string): boolean =>
  line.includes('](#') && /^[\s|:*+\-\d.)]*$/.test(line.replace(IN_PAGE_LINK, ''));

/** 'toc' when most lines are entries (a run of joined entries counts each). */
export function isToc(content: string): boolean {
  let lines = 0;
  let entries = 0;
  for (const line of content.split('\n')) {
    const t = line.trim();
    if (t === '' || HEADING_LINE.test(line)) continue;
    lines++;
    entries += linksOnly(line) ? 1 : (t.match(TOC_ENTRY)?.length ?? 0);
  }
  return entries >= 3 && entries >= lines / 2;
}

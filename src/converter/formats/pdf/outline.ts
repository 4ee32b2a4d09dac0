/**
 * Headings from the PDF's outline (bookmarks): an entry's title found on its destination page
 * becomes a heading of the entry's level, and the styles those titles are set in are the only
 * ones other lines may be headings in. Pure: `../pdf.ts` reads the outline with pdf.js and
 * hands over plain entries; the lines are the page's, in reading order.
 */
import { sizeKey } from './headings.js';
import type { Line } from './lines.js';

/** One outline entry: its title, depth (1 = top) and the page (1-based) it points to. */
export interface OutlineEntry {
  title: string;
  level: number;
  page: number;
}

/** Where an outline title sits on its page: its line(s) and the heading level. */
export interface OutlineHeading {
  level: number;
  /** The first line of the title; the others continue it (a title wrapped over lines). */
  first: boolean;
}

/** Letters and digits only, lower case: what a title and its printed line share. */
export const titleKey = (text: string) =>
  text
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, '');

/** A key without its leading section number or `chapter`/`appendix` word (`1.2`, `A.1`, `Chapter 3`). */
const bare = (key: string) =>
  key.replace(/^(?:chapter|appendix|part|section)?(?:\d+|[a-z](?=\d))*/, '');

/** How many following lines a wrapped title may take. */
const MAX_TITLE_LINES = 3;

function matches(lineKey: string, title: string): boolean {
  if (lineKey === '' || title === '') return false;
  if (lineKey === title) return true;
  const [a, b] = [bare(lineKey), bare(title)];
  return a.length >= 3 && a === b;
}

/**
 * The lines of one page that are outline titles (`entries` are this page's). A title is matched
 * on one line or on up to three consecutive lines that together spell it; each title once, the
 * first place it occurs in reading order. Lines a title already took are not matched again.
 */
export function outlineHeadings(
  lines: readonly Line[],
  entries: readonly OutlineEntry[],
): Map<Line, OutlineHeading> {
  const found = new Map<Line, OutlineHeading>();
  if (entries.length === 0) return found;
  const keys = lines.map((l) => titleKey(l.text));
  for (const entry of entries) {
    const title = titleKey(entry.title);
    if (title === '') continue;
    for (let i = 0; i < lines.length; i++) {
      const start = lines[i];
      if (start === undefined || found.has(start)) continue;
      let joined = '';
      let end = -1;
      for (let j = i; j < Math.min(lines.length, i + MAX_TITLE_LINES); j++) {
        const line = lines[j];
        if (line === undefined || (j > i && found.has(line))) break;
        joined += keys[j] ?? '';
        if (matches(joined, title)) {
          end = j;
          break;
        }
        // Stop once the joined lines can no longer be the start of the title.
        if (!title.includes(bare(joined)) && !title.startsWith(joined)) break;
      }
      if (end < 0) continue;
      for (let j = i; j <= end; j++) {
        const line = lines[j];
        if (line !== undefined)
          found.set(line, { level: Math.min(6, entry.level), first: j === i });
      }
      break;
    }
  }
  return found;
}

/** Entries grouped by page (1-based). */
export function entriesByPage(entries: readonly OutlineEntry[]): Map<number, OutlineEntry[]> {
  const pages = new Map<number, OutlineEntry[]>();
  for (const e of entries) pages.set(e.page, [...(pages.get(e.page) ?? []), e]);
  return pages;
}

/**
 * The styles an outline's titles are set in, where they were found: each title's size (`sizeKey`)
 * with its font (one font at two sizes is two styles: a section title and a subheading), and the
 * sizes alone (for a line of mixed fonts).
 */
export interface OutlineStyles {
  styles: ReadonlySet<string>;
  sizes: ReadonlySet<number>;
}

const styleKey = (l: Line) => `${sizeKey(l.size)}:${l.font ?? ''}`;

/** The styles of the lines that are outline titles; undefined when none was found. */
export function outlineStyles(titles: readonly Line[]): OutlineStyles | undefined {
  if (titles.length === 0) return undefined;
  return {
    styles: new Set(titles.map(styleKey)),
    sizes: new Set(titles.map((l) => sizeKey(l.size))),
  };
}

/**
 * Whether a line is set in a style of the outline's titles (any line is, without an outline; a
 * line of mixed fonts, in a title's size). Where the author listed the headings, a larger or
 * bolder style that no listed heading uses is emphasis, not a heading (Texinfo's `@subheading`
 * over each function of a reference, the title page's lines): only the outline's own styles
 * are evidence.
 */
export function inOutlineStyle(l: Line, outline: OutlineStyles | undefined): boolean {
  if (outline === undefined) return true;
  return l.font === undefined
    ? outline.sizes.has(sizeKey(l.size))
    : outline.styles.has(styleKey(l));
}

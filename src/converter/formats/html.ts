/**
 * HTML → GFM with turndown. Page furniture (scripts, styles, navigation, forms, hidden elements)
 * is dropped; headings, lists, code blocks and links are kept; every data table becomes a GFM
 * table. The GFM plugin's own table rule is not used: it keeps tables without a `<th>` header row
 * as raw HTML, which is noise in a search index. Here the first row is always the header.
 */
import TurndownService from 'turndown';
import { highlightedCodeBlock, strikethrough, taskListItems } from 'turndown-plugin-gfm';
import { EXIT_CODES } from '../contract.js';
import { ConvertError } from './convert-error.js';
import { limitNesting, MAX_HTML_DEPTH } from './html-nesting.js';
import { isPermalink, isSelfLink } from './html-permalinks.js';
import { escapeCell, fenced } from './markdown.js';
import type { Conversion } from './types.js';

/**
 * The few DOM members used here. The project compiles without the DOM lib, so turndown's node
 * type is opaque; nodes are viewed through this interface instead.
 */
interface DomNode {
  nodeName: string;
  parentNode: DomNode | null;
  childNodes: ArrayLike<DomNode>;
  textContent: string | null;
  getAttribute?: (name: string) => string | null;
  hasAttribute?: (name: string) => boolean;
}

const dom = (node: unknown) => node as DomNode;

/** Elements that never hold document text worth indexing. */
const NOISE = new Set([
  'SCRIPT',
  'STYLE',
  'NOSCRIPT',
  'TEMPLATE',
  'HEAD',
  // turndown parses the input as a body fragment, so head-only elements can turn up anywhere.
  'TITLE',
  'META',
  'LINK',
  'BASE',
  'NAV',
  'IFRAME',
  'OBJECT',
  'EMBED',
  'SVG',
  'CANVAS',
  'BUTTON',
  'SELECT',
  'TEXTAREA',
  'INPUT',
  'DIALOG',
]);

const SECTIONS = new Set(['THEAD', 'TBODY', 'TFOOT']);
const CELLS = new Set(['TH', 'TD']);
/** Caps absurd `colspan`s so one attribute cannot make a table a million columns wide. */
const MAX_COLSPAN = 100;

function children(node: DomNode): DomNode[] {
  return Array.from(node.childNodes);
}

/** Whether a `<pre>` starts with `<code>`: turndown's own fenced-code rule takes those. */
function codeFirst(pre: DomNode): boolean {
  return pre.childNodes[0]?.nodeName === 'CODE';
}

function isNoise(node: DomNode): boolean {
  return (
    NOISE.has(node.nodeName.toUpperCase()) ||
    node.hasAttribute?.('hidden') === true ||
    node.getAttribute?.('aria-hidden') === 'true'
  );
}

/** The rows that belong to a table itself (not to tables nested in its cells). */
function tableRows(table: DomNode): DomNode[] {
  return children(table).flatMap((child) =>
    SECTIONS.has(child.nodeName)
      ? children(child).filter((c) => c.nodeName === 'TR')
      : child.nodeName === 'TR'
        ? [child]
        : [],
  );
}

function ownerTable(row: DomNode): DomNode | null {
  const parent = row.parentNode;
  if (parent === null) return null;
  if (parent.nodeName === 'TABLE') return parent;
  return SECTIONS.has(parent.nodeName) && parent.parentNode?.nodeName === 'TABLE'
    ? parent.parentNode
    : null;
}

function colspan(cell: DomNode): number {
  const n = Number.parseInt(cell.getAttribute?.('colspan') ?? '1', 10);
  return Number.isFinite(n) && n > 1 ? Math.min(n, MAX_COLSPAN) : 1;
}

function rowWidth(row: DomNode): number {
  return children(row)
    .filter((c) => CELLS.has(c.nodeName))
    .reduce((sum, c) => sum + colspan(c), 0);
}

/**
 * Per-table facts, computed once per table rather than once per row. A table with a single row or
 * a single column is a layout table (a page frame, a boxed note), not data: it is unwrapped.
 */
function tableInfo(
  cache: WeakMap<DomNode, { width: number; first: DomNode | null; data: boolean }>,
  table: DomNode,
) {
  let info = cache.get(table);
  if (info === undefined) {
    const rows = tableRows(table);
    const width = rows.reduce((max, r) => Math.max(max, rowWidth(r)), 0);
    info = { width, first: rows[0] ?? null, data: rows.length > 1 && width > 1 };
    cache.set(table, info);
  }
  return info;
}

function createService(): TurndownService {
  const service = new TurndownService({
    headingStyle: 'atx',
    codeBlockStyle: 'fenced',
    bulletListMarker: '-',
    emDelimiter: '_',
    hr: '---',
  });
  service.use([highlightedCodeBlock, strikethrough, taskListItems]);

  const cache = new WeakMap<DomNode, { width: number; first: DomNode | null; data: boolean }>();
  const dataTable = (table: DomNode | null) => table !== null && tableInfo(cache, table).data;
  const cellTable = (cell: DomNode) =>
    cell.parentNode === null ? null : ownerTable(cell.parentNode);

  // Each cell renders as ` text |` (plus empty cells for a colspan); the row adds the leading `|`,
  // pads short rows and, for the first row, the `| --- |` line.
  service.addRule('apsTableCell', {
    filter: (node) => CELLS.has(dom(node).nodeName) && dataTable(cellTable(dom(node))),
    replacement: (content, node) =>
      ` ${escapeCell(content)} |` + '  |'.repeat(colspan(dom(node)) - 1),
  });
  service.addRule('apsTableRow', {
    filter: (node) => dom(node).nodeName === 'TR' && dataTable(ownerTable(dom(node))),
    replacement: (content, node) => {
      const row = dom(node);
      const info = tableInfo(cache, ownerTable(row) as DomNode);
      const padded = `|${content}${'  |'.repeat(Math.max(0, info.width - rowWidth(row)))}`;
      return info.first === row ? `\n${padded}\n|${' --- |'.repeat(info.width)}` : `\n${padded}`;
    },
  });
  service.addRule('apsTableSection', {
    filter: (node) => SECTIONS.has(dom(node).nodeName) && dataTable(dom(node).parentNode),
    replacement: (content) => content,
  });
  service.addRule('apsTableCaption', {
    filter: (node) => dom(node).nodeName === 'CAPTION',
    replacement: () => '', // rendered by the table rule, above the table
  });
  service.addRule('apsTable', {
    filter: (node) => dom(node).nodeName === 'TABLE',
    replacement: (content, node) => {
      const table = dom(node);
      if (!dataTable(table)) return `\n\n${content}\n\n`;
      const caption = children(table).find((c) => c.nodeName === 'CAPTION');
      const title = caption?.textContent?.replace(/\s+/g, ' ').trim() ?? '';
      return `\n\n${title === '' ? '' : `**${title}**\n\n`}${content.trim()}\n\n`;
    },
  });
  // turndown fences only `<pre><code>`; any other `<pre>` (DocBook's `<pre class="screen">`, man
  // pages) came out as escaped prose, so its `# comment` lines became headings. Its text, as is.
  service.addRule('apsPre', {
    filter: (node) => dom(node).nodeName === 'PRE' && !codeFirst(dom(node)),
    replacement: (_content, node) => {
      const pre = dom(node);
      const code = (pre.textContent ?? '').replace(/^\n+|\s+$/g, '');
      if (code === '') return '';
      const language = /(?:^|\s)lang(?:uage)?-(\S+)/.exec(pre.getAttribute?.('class') ?? '')?.[1];
      return `\n\n${fenced(code, language ?? '')}\n\n`;
    },
  });
  // Inline images (`data:` URLs) can be megabytes of base64; only their alt text is kept.
  service.addRule('apsDataImage', {
    filter: (node) =>
      dom(node).nodeName === 'IMG' && /^\s*data:/i.test(dom(node).getAttribute?.('src') ?? ''),
    replacement: (_content, node) => service.escape(dom(node).getAttribute?.('alt') ?? ''),
  });
  // Permalink signs go; a heading's link to itself keeps its words (html-permalinks.ts).
  service.addRule('apsPermalink', {
    filter: (node) => isPermalink(dom(node)),
    replacement: () => '',
  });
  service.addRule('apsSelfLink', {
    filter: (node) => !isPermalink(dom(node)) && isSelfLink(dom(node)),
    replacement: (content) => content,
  });
  // turndown's own heading rule keeps the space a dropped leading permalink leaves (`#  Title`).
  service.addRule('apsHeading', {
    filter: ['h1', 'h2', 'h3', 'h4', 'h5', 'h6'],
    replacement: (content, node) => {
      const text = content.replace(/\s+/g, ' ').trim();
      const level = Number(dom(node).nodeName.charAt(1));
      return text === '' ? '' : `\n\n${'#'.repeat(level)} ${text}\n\n`;
    },
  });
  // Added last so it wins over every rule above (turndown tries the newest rule first): a hidden
  // table is dropped, not rendered.
  service.addRule('apsNoise', { filter: (node) => isNoise(dom(node)), replacement: () => '' });
  return service;
}

/**
 * Converts an HTML document or fragment to GFM markdown. Markup nested deeper than `maxDepth` is
 * unwrapped first (see html-nesting.ts), so time grows with the size of the file, not its depth.
 */
export function htmlToMarkdown(html: string, maxDepth = MAX_HTML_DEPTH): Conversion {
  const limited = limitNesting(html, maxDepth);
  let markdown: string;
  try {
    markdown = createService().turndown(limited.html).trim();
  } catch (error) {
    // turndown recurses per level; the cap keeps it far from the stack's end, but should some
    // markup still build a tree that deep, say so rather than report a crash.
    if (!(error instanceof RangeError)) throw error;
    throw new ConvertError(
      EXIT_CODES.TOO_LARGE,
      `the HTML nests elements too deeply to convert (${error.message})`,
    );
  }
  const warnings =
    limited.dropped === 0
      ? []
      : [
          `the HTML nests elements more than ${maxDepth} levels deep; ` +
            `${limited.dropped} deeper tags were dropped and their text kept`,
        ];
  return { markdown: markdown === '' ? '' : `${markdown}\n`, warnings };
}

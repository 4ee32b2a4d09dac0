/**
 * OpenDocument (ODT, ODS): the package checks both share, and ODT → HTML → GFM. Headings come
 * from `text:h` outline levels, lists from `text:list` (ordered when the list style numbers its
 * first level), tables from `table:table`, footnotes and endnotes from `text:note`. Tracked
 * deletions, comments and generated indexes (tables of contents) are left out: they are not the
 * document's text, or they repeat it.
 */
import { EXIT_CODES } from '../../contract.js';
import { ConvertError } from '../convert-error.js';
import { escapeHtml, htmlWithNotesToMarkdown, noteRef, type Note } from './markup.js';
import { parseTree } from './opc.js';
import { attr, childNamed, elementsOf, findAll, type XmlElement, type XmlNode } from './xml.js';
import type { ZipArchive } from './zip.js';

/**
 * Refuses a password-protected package (its manifest lists encryption data; the parts are
 * ciphertext) and one without `content.xml`.
 */
export async function checkOdfPackage(archive: ZipArchive, what: string): Promise<void> {
  if (archive.has('META-INF/manifest.xml')) {
    const manifest = await archive.text('META-INF/manifest.xml');
    if (/<(?:[\w.-]+:)?encryption-data\b/.test(manifest)) {
      throw new ConvertError(EXIT_CODES.ENCRYPTED, `the ${what} file is password-protected`);
    }
  }
  if (!archive.has('content.xml')) {
    throw new ConvertError(EXIT_CODES.CORRUPT, `the ${what} file has no content.xml`);
  }
}

/** Elements whose content is never the document's own text. */
const SKIPPED = new Set([
  'tracked-changes',
  'annotation',
  'annotation-end',
  'note-citation',
  'sequence-decls',
  'variable-decls',
  'user-field-decls',
  'forms',
  'soft-page-break',
  'table-of-content',
  'alphabetical-index',
  'illustration-index',
  'table-index',
  'object-index',
  'user-index',
  'bibliography',
]);

const MAX_REPEAT = 64;

class OdtRenderer {
  readonly notes: Note[] = [];
  /** List style name → levels (1-based) that are numbered. */
  private readonly numbered = new Map<string, Set<number>>();

  constructor(root: XmlElement) {
    for (const style of findAll(root, 'list-style')) {
      const name = attr(style, 'name');
      if (name === undefined) continue;
      const levels = new Set<number>();
      for (const level of elementsOf(style)) {
        if (level.local === 'list-level-style-number') levels.add(Number(attr(level, 'level')));
      }
      this.numbered.set(name, levels);
    }
  }

  blocks(nodes: readonly XmlNode[], list?: { style: string; level: number }): string {
    return nodes.map((n) => (typeof n === 'string' ? '' : this.block(n, list))).join('');
  }

  private block(el: XmlElement, list?: { style: string; level: number }): string {
    if (SKIPPED.has(el.local)) return '';
    switch (el.local) {
      case 'h': {
        const level = Math.min(6, Math.max(1, Number(attr(el, 'outline-level') ?? 1) || 1));
        return `<h${level}>${this.inline(el.children)}</h${level}>`;
      }
      case 'p':
        return `<p>${this.inline(el.children)}</p>`;
      case 'list': {
        const style = attr(el, 'style-name') ?? list?.style ?? '';
        const level = (list?.level ?? 0) + 1;
        const tag = this.numbered.get(style)?.has(level) === true ? 'ol' : 'ul';
        const items = elementsOf(el)
          .filter((c) => c.local === 'list-item' || c.local === 'list-header')
          .map((item) => `<li>${this.listItem(item, { style, level })}</li>`);
        return `<${tag}>${items.join('')}</${tag}>`;
      }
      case 'table':
        return this.table(el);
      default:
        return this.blocks(el.children, list);
    }
  }

  /**
   * An item's paragraphs as lines rather than `<p>`s: turndown would otherwise make every list
   * loose, with blank lines between the items.
   */
  private listItem(item: XmlElement, list: { style: string; level: number }): string {
    const lines: string[] = [];
    let html = '';
    for (const child of elementsOf(item)) {
      if (child.local === 'p' || child.local === 'h') lines.push(this.inline(child.children));
      else {
        html += lines.splice(0).join('<br>') + this.block(child, list);
      }
    }
    return html + lines.join('<br>');
  }

  private table(el: XmlElement): string {
    const rows: string[] = [];
    const walk = (node: XmlElement) => {
      for (const child of elementsOf(node)) {
        if (child.local === 'table-row') rows.push(this.row(child));
        else if (/^table-(?:header-)?rows$|^table-row-group$/.test(child.local)) walk(child);
      }
    };
    walk(el);
    return `<table>${rows.join('')}</table>`;
  }

  private row(el: XmlElement): string {
    const cells = elementsOf(el)
      .filter((c) => c.local === 'table-cell')
      .map((cell) => {
        const span = Number(attr(cell, 'number-columns-spanned') ?? 1);
        const repeat = Math.min(MAX_REPEAT, Number(attr(cell, 'number-columns-repeated') ?? 1));
        const colspan = span > 1 ? ` colspan="${Math.min(MAX_REPEAT, span)}"` : '';
        const html = `<td${colspan}>${this.blocks(cell.children)}</td>`;
        return html.repeat(Number.isFinite(repeat) && repeat > 1 ? repeat : 1);
      });
    return `<tr>${cells.join('')}</tr>`;
  }

  private inline(nodes: readonly XmlNode[]): string {
    return nodes.map((n) => this.inlineNode(n)).join('');
  }

  private inlineNode(node: XmlNode): string {
    if (typeof node === 'string') return escapeHtml(node);
    if (SKIPPED.has(node.local)) return '';
    switch (node.local) {
      case 's':
      case 'tab':
        return ' ';
      case 'line-break':
        return '<br>';
      case 'a': {
        const href = attr(node, 'href') ?? '';
        const text = this.inline(node.children);
        return /^https?:|^mailto:/i.test(href) ? `<a href="${escapeHtml(href)}">${text}</a>` : text;
      }
      case 'note': {
        const label = String(this.notes.length + 1);
        const body = childNamed(node, 'note-body');
        this.notes.push({ label, html: body === undefined ? '' : this.blocks(body.children) });
        return noteRef(label);
      }
      case 'frame':
      case 'text-box':
        // A text frame anchored in a paragraph holds paragraphs of its own.
        return node.local === 'frame' ? this.inline(node.children) : this.blocks(node.children);
      case 'image':
      case 'object':
        return '';
      default:
        return this.inline(node.children);
    }
  }
}

export async function odtToMarkdown(
  archive: ZipArchive,
): Promise<{ markdown: string; warnings: string[] }> {
  await checkOdfPackage(archive, 'ODT');
  const root = await parseTree(archive, 'content.xml');
  const officeBody = childNamed(root, 'body');
  const body = officeBody === undefined ? undefined : childNamed(officeBody, 'text');
  if (body === undefined) {
    throw new ConvertError(EXIT_CODES.CORRUPT, 'the ODT file has no text body (office:text)');
  }
  const renderer = new OdtRenderer(root);
  const html = renderer.blocks(body.children);
  return { markdown: htmlWithNotesToMarkdown(html, renderer.notes), warnings: [] };
}

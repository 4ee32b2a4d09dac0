/**
 * PPTX → one section per slide, in presentation order: a page marker (page = slide number), the
 * title as `## …` (`## Slide n` without one), the text of the other shapes (bulleted where the
 * slide shows bullets, nested by level), tables, then the speaker notes after `Notes:`. Footer,
 * date and slide-number placeholders are left out: they repeat on every slide.
 */
import { EXIT_CODES, pageMarker } from '../../contract.js';
import { ConvertError } from '../convert-error.js';
import { htmlToMarkdown } from '../html.js';
import { escapeHtml, escapePageMarkers } from './markup.js';
import { mainPart, parseTree, readRelationships } from './opc.js';
import {
  attr,
  childNamed,
  childrenNamed,
  elementsOf,
  findAll,
  textContent,
  type XmlElement,
} from './xml.js';
import type { ZipArchive } from './zip.js';

const TITLES = new Set(['title', 'ctrTitle']);
const FURNITURE = new Set(['dt', 'ftr', 'sldNum', 'sldImg', 'hdr']);
/** Placeholders whose paragraphs are bullets unless a paragraph says otherwise. */
const BULLETED = new Set(['body', 'obj', '']);

/** A paragraph's text: runs, fields (dates, slide numbers) and line breaks. */
function paragraphHtml(p: XmlElement): string {
  return elementsOf(p)
    .map((c) => {
      if (c.local === 'br') return '<br>';
      if (c.local !== 'r' && c.local !== 'fld') return '';
      const t = childNamed(c, 't');
      return t === undefined ? '' : escapeHtml(textContent(t));
    })
    .join('')
    .trim();
}

interface Item {
  html: string;
  children: Item[];
}

/** Paragraphs at indent levels → nested `<ul>`s. */
function nestedList(items: readonly { level: number; html: string }[]): string {
  const root: Item[] = [];
  const stack: { level: number; item: Item }[] = [];
  for (const { level, html } of items) {
    while (stack.length > 0 && (stack.at(-1)?.level ?? 0) >= level) stack.pop();
    const item: Item = { html, children: [] };
    (stack.at(-1)?.item.children ?? root).push(item);
    stack.push({ level, item });
  }
  const render = (list: Item[]): string =>
    `<ul>${list.map((i) => `<li>${i.html}${i.children.length > 0 ? render(i.children) : ''}</li>`).join('')}</ul>`;
  return render(root);
}

function placeholderType(shape: XmlElement): string | null {
  const ph = findAll(shape, 'ph')[0];
  return ph === undefined ? null : (attr(ph, 'type') ?? '');
}

/** One text body as HTML: bulleted runs of paragraphs become lists, the rest paragraphs. */
function textBodyHtml(body: XmlElement, bulletedByDefault: boolean): string {
  let html = '';
  let items: { level: number; html: string }[] = [];
  const flush = () => {
    if (items.length > 0) html += nestedList(items);
    items = [];
  };
  for (const p of childrenNamed(body, 'p')) {
    const text = paragraphHtml(p);
    if (text === '') continue;
    const props = childNamed(p, 'pPr');
    const explicit =
      props !== undefined && elementsOf(props).some((c) => /^bu(?:Char|AutoNum)$/.test(c.local));
    const none = props !== undefined && childNamed(props, 'buNone') !== undefined;
    if (explicit || (bulletedByDefault && !none)) {
      items.push({ level: Number(attr(props ?? p, 'lvl') ?? 0) || 0, html: text });
    } else {
      flush();
      html += `<p>${text}</p>`;
    }
  }
  flush();
  return html;
}

function tableHtml(table: XmlElement): string {
  const rows = childrenNamed(table, 'tr').map((tr) => {
    const cells = childrenNamed(tr, 'tc')
      .filter((tc) => attr(tc, 'hMerge') !== '1' && attr(tc, 'vMerge') !== '1')
      .map((tc) => {
        const body = childNamed(tc, 'txBody');
        const text =
          body === undefined ? '' : childrenNamed(body, 'p').map(paragraphHtml).join('<br>');
        const span = Number(attr(tc, 'gridSpan') ?? 1);
        return `<td${span > 1 ? ` colspan="${Math.min(span, 100)}"` : ''}>${text}</td>`;
      });
    return `<tr>${cells.join('')}</tr>`;
  });
  return `<table>${rows.join('')}</table>`;
}

/** The shapes of a slide or notes page, in z-order (the order they were placed). */
function shapes(tree: XmlElement, title: string[], out: string[], notes = false): void {
  for (const el of elementsOf(tree)) {
    if (el.local === 'grpSp') shapes(el, title, out, notes);
    else if (el.local === 'AlternateContent') {
      const choice = elementsOf(el)[0]; // one rendition only, or its text would appear twice
      if (choice !== undefined) shapes(choice, title, out, notes);
    } else if (el.local === 'graphicFrame') {
      for (const table of findAll(el, 'tbl')) out.push(tableHtml(table));
    } else if (el.local === 'sp') {
      const type = placeholderType(el);
      const body = childNamed(el, 'txBody');
      if (body === undefined || (type !== null && FURNITURE.has(type))) continue;
      if (notes && type !== 'body') continue;
      if (!notes && type !== null && TITLES.has(type)) {
        const lines = childrenNamed(body, 'p').map((p) => paragraphHtml(p).replace(/<br>/g, ' '));
        title.push(lines.filter((t) => t !== '').join(' '));
      } else {
        out.push(textBodyHtml(body, !notes && type !== null && BULLETED.has(type)));
      }
    }
  }
}

function spTree(root: XmlElement): XmlElement | undefined {
  return findAll(root, 'spTree')[0];
}

export async function pptxToMarkdown(
  archive: ZipArchive,
  maxPages: number,
): Promise<{ markdown: string; warnings: string[]; pages: number }> {
  const presentationPart = await mainPart(archive, 'ppt/presentation.xml', 'PPTX');
  const presentation = await parseTree(archive, presentationPart);
  const rels = await readRelationships(archive, presentationPart);
  const ids = findAll(presentation, 'sldId').map((s) => attr(s, 'r:id'));
  const slideParts = ids
    .map((id) => rels.find((r) => r.id === id && r.type === 'slide')?.target)
    .filter((t): t is string => t !== undefined && archive.has(t));
  if (slideParts.length > maxPages) {
    throw new ConvertError(
      EXIT_CODES.TOO_LARGE,
      `the presentation has ${slideParts.length} slides; at most ${maxPages} are converted`,
    );
  }
  const warnings: string[] = [];
  if (slideParts.length < ids.length) warnings.push('some slides are missing from the file');
  const sections: string[] = [];
  let anyText = false;
  for (const [index, part] of slideParts.entries()) {
    const n = index + 1;
    const title: string[] = [];
    const body: string[] = [];
    const tree = spTree(await parseTree(archive, part));
    if (tree !== undefined) shapes(tree, title, body);
    const notesPart = (await readRelationships(archive, part)).find(
      (r) => r.type === 'notesSlide' && archive.has(r.target),
    )?.target;
    const notes: string[] = [];
    const notesTree =
      notesPart === undefined ? undefined : spTree(await parseTree(archive, notesPart));
    if (notesTree !== undefined) shapes(notesTree, [], notes, true);
    const heading = title.join(' ').trim();
    const content = htmlToMarkdown(body.join('')).markdown.trim();
    const notesText = htmlToMarkdown(notes.join('')).markdown.trim();
    if (heading !== '' || content !== '' || notesText !== '') anyText = true;
    const headingMd = htmlToMarkdown(
      `<h2>${heading === '' ? `Slide ${n}` : heading}</h2>`,
    ).markdown.trim();
    const parts = [headingMd, content, notesText === '' ? '' : `Notes:\n\n${notesText}`];
    const text = escapePageMarkers(parts.filter((p) => p !== '').join('\n\n'));
    sections.push(`${pageMarker(n)}\n\n${text}`);
  }
  if (!anyText) {
    throw new ConvertError(EXIT_CODES.NOTHING_EXTRACTABLE, 'the presentation has no text');
  }
  return { markdown: `${sections.join('\n\n')}\n`, warnings, pages: slideParts.length };
}

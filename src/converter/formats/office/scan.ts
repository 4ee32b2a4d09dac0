/**
 * A streaming XML scanner for spreadsheets: it reports where chosen container elements (an ODS
 * table) open and close, and hands out the whole source of each chosen element (a row), one at a
 * time, so a sheet is never held as one string or one tree. Work stays linear in the input: an
 * element still arriving is kept as a list of pieces, and only each new piece (plus a short
 * overlap) is searched for its close tag.
 *
 * Rows do not nest in the formats scanned, so an element ends at the first matching close tag.
 * Comments and CDATA are not interpreted (spreadsheet writers do not put markup in them).
 */
import { tagAttributes } from './xml.js';

type ScanEvent =
  | { type: 'open'; local: string; attrs: Record<string, string> }
  | { type: 'close'; local: string }
  | { type: 'element'; local: string; xml: string };

const TAG = /<(\/?)(?:[\w.-]+:)?([\w.-]+)(?=[\s/>])/g;
/** Longer than any close tag, so one split between two pieces is still found. */
const OVERLAP = 256;
/** A start tag or comment still unfinished after this many characters is malformed input. */
const MAX_PENDING = 4 * 1024 * 1024;

interface Collecting {
  local: string;
  close: RegExp;
  parts: string[];
  tail: string;
}

const closeTags = new Map<string, RegExp>();

/** The close-tag pattern for `local`, built once per name (a sheet asks for it on every row). */
function closeTag(local: string): RegExp {
  let re = closeTags.get(local);
  if (re === undefined) {
    re = new RegExp(`</(?:[\\w.-]+:)?${local.replace(/\./g, '\\.')}\\s*>`, 'g');
    closeTags.set(local, re);
  }
  return re;
}

/** Looks for the close tag in the next piece; returns the piece's unused rest once complete. */
function collect(state: Collecting, text: string): string | null {
  const search = state.tail + text;
  state.close.lastIndex = 0;
  const m = state.close.exec(search);
  if (m === null) {
    state.parts.push(text);
    state.tail = search.slice(-OVERLAP);
    return null;
  }
  const cut = m.index + m[0].length - state.tail.length;
  state.parts.push(text.slice(0, cut));
  return text.slice(cut);
}

export async function* scanXml(
  chunks: AsyncIterable<string>,
  containers: readonly string[],
  elements: readonly string[],
): AsyncGenerator<ScanEvent> {
  const wanted = new Set(elements);
  const boxes = new Set(containers);
  let collecting: Collecting | null = null;
  let buf = '';
  for await (const text of chunks) {
    let input = text;
    if (collecting !== null) {
      const rest = collect(collecting, input);
      if (rest === null) continue;
      yield { type: 'element', local: collecting.local, xml: collecting.parts.join('') };
      collecting = null;
      input = rest;
    }
    buf += input;
    let pos = 0;
    for (;;) {
      TAG.lastIndex = pos;
      const m = TAG.exec(buf);
      const gt = m === null ? -1 : buf.indexOf('>', m.index);
      if (m === null || gt < 0) {
        // Keep a tag that may still be arriving; everything before it is done with.
        const lt = buf.lastIndexOf('<');
        pos = m !== null ? m.index : lt >= pos ? lt : buf.length;
        break;
      }
      const local = m[2] ?? '';
      const closing = m[1] === '/';
      const selfClosing = buf[gt - 1] === '/';
      pos = gt + 1;
      if (!closing && wanted.has(local)) {
        if (selfClosing) {
          yield { type: 'element', local, xml: buf.slice(m.index, gt + 1) };
          continue;
        }
        const close = closeTag(local);
        close.lastIndex = pos;
        const end = close.exec(buf);
        if (end !== null) {
          pos = end.index + end[0].length;
          yield { type: 'element', local, xml: buf.slice(m.index, pos) };
          continue;
        }
        const parts = [buf.slice(m.index)];
        // The overlap must not reach back before the start tag, to an earlier row's close tag.
        const tail = buf.slice(Math.max(m.index, buf.length - OVERLAP));
        collecting = { local, close, parts, tail };
        pos = buf.length;
        break;
      }
      if (boxes.has(local)) {
        if (!closing) {
          yield { type: 'open', local, attrs: tagAttributes(buf.slice(m.index, gt + 1)) };
        }
        if (closing || selfClosing) yield { type: 'close', local };
      }
    }
    buf = buf.slice(pos);
    if (buf.length > MAX_PENDING) throw new Error('malformed XML: a tag that never ends');
  }
  if (collecting !== null) throw new Error(`the XML ends inside <${collecting.local}>`);
}

/**
 * XML for the office converters: a small ordered tree over fast-xml-parser (mixed content such as
 * `<p>a<span>b</span>c</p>` must keep its order), looked up by local name so that unusual
 * namespace prefixes still work. Spreadsheets are not parsed whole: see scan.ts.
 *
 * Entities: only the five predefined ones and character references are decoded. DTD entities are
 * never expanded (office formats do not use DTDs), which rules out entity-expansion bombs.
 */
import { XMLParser } from 'fast-xml-parser';

export interface XmlElement {
  /** Qualified name as written, e.g. `text:p`. */
  name: string;
  /** Name without its prefix, e.g. `p`. */
  local: string;
  attrs: Record<string, string>;
  children: XmlNode[];
}

export type XmlNode = XmlElement | string;

/**
 * Element nesting fast-xml-parser accepts (its own default, named here): the tree below is built
 * and walked recursively, and no office document nests anywhere near this deep.
 */
export const MAX_XML_DEPTH = 100;

const parser = new XMLParser({
  maxNestedTags: MAX_XML_DEPTH,
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: '',
  trimValues: false,
  parseTagValue: false,
  parseAttributeValue: false,
  processEntities: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  cdataPropName: '#cdata',
});

function localName(name: string): string {
  const colon = name.indexOf(':');
  return colon < 0 ? name : name.slice(colon + 1);
}

function codePoint(n: number): string {
  return Number.isInteger(n) && n > 0 && n <= 0x10ffff ? String.fromCodePoint(n) : '\uFFFD';
}

const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** Decodes the predefined entities and character references; anything else stays as written. */
export function decodeEntities(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(/&(?:#x([0-9a-f]+)|#(\d+)|(amp|lt|gt|quot|apos));/gi, (m, hex, dec, name) => {
    if (typeof hex === 'string') return codePoint(Number.parseInt(hex, 16));
    if (typeof dec === 'string') return codePoint(Number.parseInt(dec, 10));
    return NAMED[String(name).toLowerCase()] ?? m;
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** fast-xml-parser's ordered output (`[{ tag: [...children], ':@': {attrs} }, {'#text': …}]`). */
function convert(items: unknown, raw = false): XmlNode[] {
  if (!Array.isArray(items)) return [];
  const out: XmlNode[] = [];
  for (const item of items as unknown[]) {
    if (!isRecord(item)) continue;
    for (const [key, value] of Object.entries(item)) {
      if (key === ':@') continue;
      if (key === '#text') {
        const text = typeof value === 'string' ? value : String(value);
        out.push(raw ? text : decodeEntities(text));
      } else if (key === '#cdata') {
        out.push(...convert(value, true));
      } else {
        const attrs: Record<string, string> = {};
        const rawAttrs = item[':@'];
        if (isRecord(rawAttrs)) {
          for (const [name, v] of Object.entries(rawAttrs)) {
            attrs[name] = decodeEntities(typeof v === 'string' ? v : String(v));
          }
        }
        out.push({ name: key, local: localName(key), attrs, children: convert(value) });
      }
    }
  }
  return out;
}

/** The root element of an XML document (or of one element's source). Throws on malformed XML. */
export function parseXml(text: string): XmlElement {
  let parsed: unknown;
  try {
    parsed = parser.parse(text);
  } catch (error) {
    // The library's wording ("Maximum nested tags exceeded") reads as if the XML were broken.
    if (error instanceof Error && /nested tags/i.test(error.message)) {
      throw new Error(`elements nested more than ${MAX_XML_DEPTH} levels deep`, { cause: error });
    }
    throw error;
  }
  const root = convert(parsed).find((n): n is XmlElement => typeof n !== 'string');
  if (root === undefined) throw new Error('no XML root element');
  return root;
}

export function elementsOf(node: XmlElement): XmlElement[] {
  return node.children.filter((c): c is XmlElement => typeof c !== 'string');
}

/** Direct children with the local name. */
export function childrenNamed(node: XmlElement, local: string): XmlElement[] {
  return elementsOf(node).filter((c) => c.local === local);
}

export function childNamed(node: XmlElement, local: string): XmlElement | undefined {
  return elementsOf(node).find((c) => c.local === local);
}

/** Descendants with the local name, in document order (not below a match). */
export function findAll(node: XmlElement, local: string): XmlElement[] {
  const out: XmlElement[] = [];
  const walk = (el: XmlElement) => {
    for (const c of elementsOf(el)) {
      if (c.local === local) out.push(c);
      else walk(c);
    }
  };
  walk(node);
  return out;
}

/**
 * An attribute by local name. `r:id` asks for a prefixed `id` (any prefix), which matters where
 * an element has both (`<p:sldId id="256" r:id="rId2">`); a bare name prefers the unprefixed one.
 */
export function attr(node: XmlElement, name: string): string | undefined {
  const wantPrefixed = name.includes(':');
  const local = localName(name);
  if (!wantPrefixed && local in node.attrs) return node.attrs[local];
  for (const [key, value] of Object.entries(node.attrs)) {
    if (key.includes(':') && localName(key) === local) return value;
  }
  return undefined;
}

export function textContent(node: XmlNode): string {
  return typeof node === 'string' ? node : node.children.map(textContent).join('');
}

/** Attributes of one start tag's source, e.g. `<table:table table:name="A">`. */
export function tagAttributes(tag: string): Record<string, string> {
  const attrs: Record<string, string> = {};
  for (const m of tag.matchAll(/([\w.:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g)) {
    if (m[1] !== undefined) attrs[m[1]] = decodeEntities(m[2] ?? m[3] ?? '');
  }
  return attrs;
}

/**
 * Compound identifiers as whole tokens. FTS5's unicode61 tokenizer (and the PostgreSQL words that
 * copy it) cut `asn1_der_decoding` into `asn1 der decoding`, so its own section ties with
 * `asn1_der_decoding_startEnd` and with any passage saying "DER decoding of ASN1"; and it keeps
 * `SetDefaultHandler` as one word, so `DefaultHandler` finds nothing. The keyword indexes
 * therefore read, after a text, extra tokens for the identifiers in it (keyword-text.ts):
 *
 * - the whole identifier, as one token: its parts lower-cased and joined by JOINER, a private-use
 *   character both tokenizers keep inside a token, and ended by one more (no suffix rule of the
 *   Porter stemmer matches it, so no engine stems the whole: `asn1⁂der⁂decoding⁂`). Identifiers
 *   are runs of words joined without space by `_`, `::`, `.`, `-` or `/`: snake_case,
 *   `os.path.join`, `std::vector::emplace_back`, `CVE-2024-3094`, `5.6.1`, `config.yaml`,
 *   `/etc/ssh/sshd_config`. A leading `-`, `--`, `_` or `/` is kept as one JOINER before the
 *   parts, so the flag `--num-callers` (and `-f`) is a token of its own, apart from the words.
 * - every qualified tail (after a `::`, `.` or `/`) of two parts or more, so `emplace_back`
 *   finds `std::vector::emplace_back` whole and `sshd_config` finds `/etc/ssh/sshd_config`;
 * - the parts of a CamelCase word (`XML_SetDefaultHandler` → `set default handler`), so a part
 *   finds it; the word itself stays a token, as before;
 * - where the identifier is defined (a heading, a definition list's term, a prototype, an option's
 *   line: eachIdentifier), its whole and tails once more behind DEFINED, so the passage that
 *   defines it outranks the ones that mention it.
 *
 * The parts stay tokens as before, so a part still matches. A query gets the same tokens
 * (identifierGroups): the whole identifier and its defined form are more query words (a passage
 * that holds it exactly outranks one holding its parts), and a CamelCase word also asks for its
 * parts together.
 */
import { isTokenChar, needsSegmenting } from './segment.js';

/** Joins the parts of an identifier token (U+E000, private use: a token character everywhere). */
export const JOINER = '\uE000';
/** Starts the token of an identifier where it is defined (U+E001, private use as well). */
export const DEFINED = '\uE001';

/** One identifier found in a text: its words, the connectors between them, its leading marker. */
interface Identifier {
  parts: string[];
  /** connectors[i] joins parts[i] and parts[i + 1]: `::`, `_`, `.`, `-` or `/`. */
  connectors: string[];
  /** `-`, `--`, `_` or `/` written before the first word without space, or ''. */
  marker: string;
  /** Whether a part has a character outside ASCII (it may be in a script cut by segment.ts). */
  wide: boolean;
  /** Whether it stands where a term is defined (eachIdentifier). */
  defined: boolean;
}

const UNDERSCORE = 0x5f;
const DASH = 0x2d;
const SLASH = 0x2f;
const DOT = 0x2e;
const COLON = 0x3a;

/** The connector starting at text[j] before a word, and where that word starts; null if none. */
function connectorAt(text: string, j: number): [string, number] | null {
  const c = text.charCodeAt(j);
  let k = j + 1;
  let connector: string;
  if (c === UNDERSCORE) {
    while (text.charCodeAt(k) === UNDERSCORE) k++;
    connector = '_';
  } else if (c === COLON && text.charCodeAt(j + 1) === COLON) {
    k = j + 2;
    connector = '::';
  } else if (c === DOT || c === DASH || c === SLASH) {
    connector = String.fromCharCode(c);
  } else {
    return null;
  }
  return k < text.length && isTokenChar(text, k, text.charCodeAt(k)) ? [connector, k] : null;
}

/**
 * The marker written right before the word at `start`: `--`/`-`, a run of `_` or of `/`, itself
 * not following a word character (`a-b` is a connector, not a marker).
 */
function markerBefore(text: string, start: number): string {
  const c = text.charCodeAt(start - 1);
  if (c !== DASH && c !== UNDERSCORE && c !== SLASH) return '';
  let from = start - 1;
  while (from > 0 && text.charCodeAt(from - 1) === c) from--;
  if (c === DASH && start - from > 2) return '';
  const before = from > 0 ? text.charCodeAt(from - 1) : -1;
  if (before >= 0 && (before === UNDERSCORE || isTokenChar(text, from - 1, before))) return '';
  return c === DASH ? text.slice(from, start) : String.fromCharCode(c);
}

/** Scratch: `[start, end)` of each word of the run being scanned. */
let bounds: Int32Array = new Int32Array(64);

/**
 * Characters that may stand between the start of a line and a defined term: markdown's heading,
 * list, table and code marks, a pointer's star (and spaces after one of them). Not `>`: a
 * doctest's `>>> json.dumps(…)` calls a function, it does not define it; nor an indented line
 * (code).
 */
const LINE_MARKS = new Set(Array.from('#-*+|`.)', (ch) => ch.charCodeAt(0)));
/** Words a term may follow at the start of its line: a prototype's or a signature's. */
const SIGNATURE_WORDS = new Set(
  `int void const char unsigned signed long short double float bool size_t ssize_t struct enum union
static inline extern virtual typedef template def class function func fn pub public async`.split(
    /\s+/,
  ),
);
const NEWLINE = 0x0a;
const SPACE = 0x20;
const TAB = 0x09;

/**
 * Whether the rest of the line after `from` is a page or section number only (`asn1_read_value
 * 13`, `2.7.3 ...... 45`): an index or a table of contents names a term, it does not define it.
 */
function indexEntryAfter(text: string, from: number): boolean {
  let digit = false;
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === NEWLINE) break;
    if (c >= 0x30 && c <= 0x39) digit = true;
    else if (c !== SPACE && c !== DOT && c !== 0x2c && c !== DASH && c !== 0x09) return false;
  }
  return digit;
}

/** Whether a word alone reads as an identifier: a letter and a digit, two capitals, or CamelCase. */
function identifierLike(word: string, camel: boolean): boolean {
  return camel || (/\d/.test(word) && /\p{L}/u.test(word)) || /\p{Lu}.*\p{Lu}/u.test(word);
}

/**
 * Calls `found` for every run of words joined without space by connectors, with a leading marker
 * or with a CamelCase word, in text order; and for an identifier-like word where a term is
 * defined. A term is defined where it starts a line (after markdown's marks, a list number or a
 * prototype's type words: a heading, a definition list's term, a prototype, an option's line),
 * unless the line is an index entry or the term is a link's text; in a section `path`, where its
 * last section starts (the heading of the chunk's own section); in a `query`, everywhere.
 * A scan of the text's characters that makes no string for a plain word: it runs over every chunk
 * indexed.
 */
function eachIdentifier(
  text: string,
  found: (id: Identifier) => void,
  where: 'text' | 'path' | 'query' = 'text',
): void {
  const n = text.length;
  let i = 0;
  // A section path defines its last section's term only (the chunk's own heading).
  const lastSection = where === 'path' ? text.lastIndexOf(' > ') : -1;
  const pathLast = lastSection < 0 ? -1 : lastSection + 3;
  let lineStart = pathLast < 0;
  /** Whether a mark was read since the line started (spaces may follow it). */
  let marked = false;
  while (i < n) {
    let c = text.charCodeAt(i);
    if (!isTokenChar(text, i, c)) {
      if (c === NEWLINE) {
        lineStart = where === 'text';
        marked = false;
      } else if (LINE_MARKS.has(c)) marked = true;
      else if (!(marked && (c === SPACE || c === TAB))) lineStart = false;
      i += c >= 0xd800 && c <= 0xdbff ? 2 : 1;
      if (i === pathLast) lineStart = true;
      continue;
    }
    const start = i;
    const marker = markerBefore(text, i);
    const connectors: string[] = [];
    let words = 0;
    let wide = false;
    let camel = false;
    for (;;) {
      if (2 * words + 2 > bounds.length) bounds = growBounds(bounds);
      bounds[2 * words] = i;
      // Case of the previous ASCII letter: 0 none, 1 lower or digit, 2 upper (3: two uppers).
      let previous = 0;
      while (i < n) {
        c = text.charCodeAt(i);
        if (c < 0x80) {
          if (c >= 0x61 && c <= 0x7a) {
            if (previous === 3) camel = true;
            previous = 1;
          } else if (c >= 0x41 && c <= 0x5a) {
            if (previous === 1) camel = true;
            previous = previous >= 2 ? 3 : 2;
          } else if (c >= 0x30 && c <= 0x39) {
            previous = 1;
          } else {
            break;
          }
          i++;
          continue;
        }
        if (!isTokenChar(text, i, c)) break;
        wide = true;
        previous = 0;
        i += c >= 0xd800 && c <= 0xdbff ? 2 : 1;
      }
      bounds[2 * words + 1] = i;
      words++;
      const next = connectorAt(text, i);
      if (next === null) break;
      connectors.push(next[0]);
      i = next[1];
    }
    // A query asks for the term where it is defined, wherever it stands in the query.
    const defined = where === 'query' || (lineStart && !indexEntryAfter(text, i));
    const single = words === 1 && marker === '';
    const word: string = single && defined ? text.slice(start, i) : '';
    // A list or section number (`4.2`) or a type word keeps the line's start for the term after it.
    const number = marker === '' && /^[\d.]+$/.test(text.slice(start, i));
    lineStart = lineStart && (number || (single && SIGNATURE_WORDS.has(word)));
    marked = lineStart;
    if (!single || camel || (defined && identifierLike(word, camel))) {
      const parts: string[] = [];
      for (let w = 0; w < words; w++) parts.push(text.slice(bounds[2 * w], bounds[2 * w + 1]));
      found({ parts, connectors, marker, wide, defined: defined && !number });
    }
  }
}

function growBounds(old: Int32Array): Int32Array {
  const grown = new Int32Array(old.length * 2);
  grown.set(old);
  return grown;
}

/** Whether an ASCII word is CamelCase: a lower-case letter or digit before a capital, or an acronym before a word. */
function isCamel(word: string): boolean {
  let upperRun = 0;
  for (let i = 0; i < word.length; i++) {
    const c = word.charCodeAt(i);
    const upper = c >= 0x41 && c <= 0x5a;
    if (!upper && c >= 0x61 && c <= 0x7a && upperRun >= 2) return true;
    if (upper && i > 0 && upperRun === 0) return true;
    upperRun = upper ? upperRun + 1 : 0;
  }
  return false;
}
/** The parts of a CamelCase word: acronyms, capitalised words, lower-case runs, with their digits. */
const CAMEL_PART = /[A-Z]+(?![a-z])\d*|[A-Z]?[a-z]+\d*|\d+/g;

/** Parts beyond which a run is not an identifier (a long URL or path): no whole token. */
const MAX_PARTS = 12;
/** UTF-16 units beyond which no whole token is made (tsvector lexemes have a byte limit). */
const MAX_TOKEN = 200;

const startsWithLetter = (part: string) => /^\p{L}/u.test(part);
const isCapitalised = (word: string) => /^[A-Z][a-z]{2,}/.test(word);

/**
 * The extra tokens of one identifier: the parts of its CamelCase words, then its whole token and
 * qualified tails (when it has two parts or more, or a leading marker).
 */
function tokensOf(id: Identifier, out: string[]): void {
  const { parts, connectors, marker, defined } = id;
  for (const part of parts) {
    if (part.length < 3 || !isCamel(part)) continue;
    // A plural acronym is one word (`APIs`, `ESCs`), and so is a code of letters and digits
    // (`HNF4A`, `H3K9me3`, `MeCP2`, `mRNA`): a word splits into parts of two letters or more,
    // one of them a capitalised word (`Handler`, `Timeout`).
    const words = part.replace(/([A-Z])s$/, '$1').match(CAMEL_PART) ?? [];
    if (words.length < 2 || words.some((w) => w.length < 2) || !words.some(isCapitalised)) continue;
    for (const w of words) out.push(w.toLowerCase());
  }
  if (parts.length > MAX_PARTS || (id.wide && parts.some(needsSegmenting))) return;
  // A dash marks a flag only before a word (`-5` is a number).
  const flag = marker !== '' && (marker[0] !== '-' || startsWithLetter(parts[0] ?? ''));
  const lower = parts.map((p) => p.toLowerCase());
  const whole = (flag ? JOINER : '') + lower.join(JOINER) + JOINER;
  if (whole.length > MAX_TOKEN) return;
  if (parts.length > 1 || flag) out.push(whole);
  if (defined) out.push(DEFINED + whole);
  connectors.forEach((connector, i) => {
    // A tail starts after a qualifier (`::`, `.`, `/`), not inside a snake_case or dashed name.
    if (connector === '_' || connector === '-') return;
    const tail = lower.slice(i + 1);
    if (!startsWithLetter(tail[0] ?? '')) return;
    const token = tail.join(JOINER) + JOINER;
    if (tail.length > 1) out.push(token);
    if (defined) out.push(DEFINED + token);
  });
}

/** The extra tokens the keyword indexes read for the identifiers of a text, in text order. */
export function identifierTokens(text: string, where: 'text' | 'path' = 'text'): string[] {
  const out: string[] = [];
  eachIdentifier(
    text,
    (id) => {
      tokensOf(id, out);
    },
    where,
  );
  return out;
}

/** Words beyond which a query reads as a sentence, not as a lookup of a name. */
const LOOKUP_WORDS = 4;

/**
 * Whether an identifier is written as code: a flag or a rooted path, snake_case, `::`, a dotted
 * name of words (`os.path.join`; not `0.05`, `e.g.`), CamelCase. In a sentence (a scientific
 * claim's `IL-6`, `T-cell`, `0.05`, `ischaemia/reperfusion`), the others are prose, and their
 * exact form says little about relevance.
 */
function codeLike(id: Identifier, camel: boolean): boolean {
  if (camel || id.marker !== '') return true;
  const word = (part: string | undefined) =>
    part !== undefined && part.length > 1 && startsWithLetter(part);
  return id.connectors.some(
    (c, i) => c === '_' || c === '::' || (c === '.' && word(id.parts[i]) && word(id.parts[i + 1])),
  );
}

/**
 * The query groups the identifiers of a query add (each group all-of, as in queryWordGroups):
 * each whole identifier, tail and defined form as a group of one, and a CamelCase word's parts as
 * one group, so "DefaultHandler" finds `XML_SetDefaultHandler` without asking for "default" or
 * "handler" alone. A query of more than LOOKUP_WORDS words is a sentence: only its identifiers
 * written as code add groups (measured: SciFact's claims lose nDCG when `IL-6` or `0.05` must
 * match whole; a lookup such as "libtasn1 3.7" or "CVE-2024-3094" gains).
 */
export function identifierGroups(text: string): string[][] {
  const groups: string[][] = [];
  const lookup = text.trim().split(/\s+/).length <= LOOKUP_WORDS;
  eachIdentifier(
    text,
    (id) => {
      const tokens: string[] = [];
      tokensOf(id, tokens);
      const camel = tokens.filter((t) => !t.includes(JOINER) && !t.startsWith(DEFINED));
      if (!lookup && !codeLike(id, camel.length > 0)) return;
      if (camel.length > 0) groups.push(camel);
      for (const t of tokens) if (!camel.includes(t)) groups.push([t]);
    },
    'query',
  );
  return groups;
}

/** The lower-cased words of the query's identifiers of two parts or more (never stop words). */
export function identifierWords(text: string): Set<string> {
  const words = new Set<string>();
  eachIdentifier(text, (id) => {
    if (id.parts.length > 1) for (const p of id.parts) words.add(p.toLowerCase());
  });
  return words;
}

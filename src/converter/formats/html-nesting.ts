/**
 * Caps how deeply HTML elements nest before the markup reaches the parser.
 *
 * Why: the HTML tree builder (domino, like every parser that follows the spec) walks the stack of
 * open elements for the scope checks most tags trigger, and turndown recurses once per level and
 * reads every node's `textContent`. Both cost depth × size, so a 1 MB file 100,000 `<div>`s deep
 * ran for minutes and then overflowed the stack. Browsers cap the depth as well (Blink at 512).
 *
 * How: one linear pass with a small tokenizer (comments, raw-text elements and quoted attribute
 * values are skipped the way the HTML tokenizer skips them) keeps an estimate of the parser's
 * stack of open elements, including the end tags HTML lets authors leave out (`<p>`, `<li>`,
 * `<td>`, …). Below the cap the input comes back unchanged, the very same string. Beyond it, start
 * tags and their end tags are dropped and the text between them kept, so every word still reaches
 * the markdown; only the markup that nested too deeply is lost.
 */

/**
 * Open elements allowed before deeper tags are dropped. Real pages stay far below it (Lighthouse
 * already flags a depth over 32); turndown spends time per level on all the text below, so the
 * worst case (a large page under the deepest allowed wrapper) grows with this number.
 */
export const MAX_HTML_DEPTH = 128;

const set = (names: string) => new Set(names.split(' '));

/** Elements without content: they never open a level. */
const VOID = set(
  'area base basefont bgsound br col embed frame hr image img input keygen link meta param ' +
    'source track wbr',
);
/** Elements whose content is text up to their own end tag (no tags inside). */
const RAW_TEXT = set('iframe noembed noframes noscript script style textarea title xmp');
/** The parser keeps one of each; repeated start tags only add attributes. */
const SINGLETONS = set('html head body');
/** Start tags that close an open `<p>` first. */
const CLOSES_P = set(
  'address article aside blockquote center details dialog dir div dl dd dt fieldset figcaption ' +
    'figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr li listing main menu nav ol p pre ' +
    'search section summary table ul xmp',
);
const HEADINGS = set('h1 h2 h3 h4 h5 h6');
/** Where the parser's scope checks stop looking down the stack. */
const SCOPE = set('applet caption html marquee object table td template th math svg');
const BUTTON_SCOPE = new Set([...SCOPE, 'button']);
const LIST_SCOPE = new Set([...SCOPE, 'ol', 'ul', 'menu']);
const DL_SCOPE = new Set([...SCOPE, 'dl']);
const TABLE_SCOPE = set('html table template');
const CELL_SCOPE = set('caption html td template th');
/** Dropped without a trace; any other dropped tag leaves a space so words do not run together. */
const INLINE = set(
  'a abbr b bdi bdo big cite code data del dfn em font i ins kbd mark nobr q s samp small span ' +
    'strike strong sub sup time tt u var',
);

const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d;
const isLetter = (c: number) => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
/** Ends a tag or attribute name: whitespace, `/`, `>` (and `=` for an attribute). */
const endsName = (c: number, attribute: boolean) =>
  isSpace(c) || c === 0x2f || c === 0x3e || (attribute && c === 0x3d);
const NOWHERE = new Set<string>();

interface Tag {
  /** Index just after the tag's `>`. */
  end: number;
  selfClosing: boolean;
}

/**
 * Skips a tag's attributes from `i` (just after its name) as the HTML tokenizer does: a `>` ends
 * the tag unless it is inside a quoted value. Null when the input ends first (the parser then
 * drops the tag).
 */
function scanAttributes(html: string, i: number): Tag | null {
  const n = html.length;
  while (i < n) {
    const c = html.charCodeAt(i);
    if (isSpace(c)) {
      i++;
    } else if (c === 0x3e /* > */) {
      return { end: i + 1, selfClosing: false };
    } else if (c === 0x2f /* / */) {
      if (html.charCodeAt(i + 1) === 0x3e) return { end: i + 2, selfClosing: true };
      i++;
    } else {
      // An attribute name (its first character may be `=`), then perhaps `= value`.
      i++;
      while (i < n && !endsName(html.charCodeAt(i), true)) i++;
      while (i < n && isSpace(html.charCodeAt(i))) i++;
      if (html.charCodeAt(i) !== 0x3d /* = */) continue;
      i++;
      while (i < n && isSpace(html.charCodeAt(i))) i++;
      const q = html[i];
      if (q === '"' || q === "'") {
        const close = html.indexOf(q, i + 1);
        if (close < 0) return null;
        i = close + 1;
      } else {
        while (i < n && !isSpace(html.charCodeAt(i)) && html[i] !== '>') i++;
      }
    }
  }
  return null;
}

/** Index just after the end of a comment or other `<!…>` / `<?…>` markup starting at `lt`. */
function skipMarkup(html: string, lt: number, foreign: boolean): number {
  const after = (found: number, length: number) => (found < 0 ? html.length : found + length);
  if (html.startsWith('<!--', lt)) {
    if (html.startsWith('>', lt + 4)) return lt + 5;
    if (html.startsWith('->', lt + 4)) return lt + 6;
    const dashes = html.indexOf('--', lt + 4);
    if (dashes < 0) return html.length;
    // `-->` or `--!>` ends a comment; search from the first `--` on, so each is scanned once.
    const a = html.indexOf('-->', dashes);
    const b = html.indexOf('--!>', dashes);
    if (a < 0 || (b >= 0 && b < a)) return after(b, 4);
    return a + 3;
  }
  if (foreign && html.startsWith('<![CDATA[', lt)) return after(html.indexOf(']]>', lt + 9), 3);
  return after(html.indexOf('>', lt + 2), 1);
}

const rawTextEnds = new Map<string, RegExp>();

/** Index of the end tag closing raw-text element `name` at or after `from` (-1 if none). */
function rawTextEnd(html: string, name: string, from: number): number {
  let re = rawTextEnds.get(name);
  if (re === undefined) {
    re = new RegExp(`</${name}[\\t\\n\\f\\r />]`, 'gi');
    rawTextEnds.set(name, re);
  }
  re.lastIndex = from;
  return re.exec(html)?.index ?? -1;
}

/** The parser's stack of open elements, as far as tag names tell it. */
class OpenElements {
  readonly names: string[] = [];
  private readonly counts = new Map<string, number>();

  get depth(): number {
    return this.names.length;
  }

  has(name: string): boolean {
    return (this.counts.get(name) ?? 0) > 0;
  }

  top(): string | undefined {
    return this.names[this.names.length - 1];
  }

  push(name: string): void {
    this.names.push(name);
    this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
  }

  pop(): void {
    const name = this.names.pop();
    if (name !== undefined) this.counts.set(name, (this.counts.get(name) ?? 1) - 1);
  }

  /** Pops up to and including the nearest of `targets`, unless one of `stops` comes first. */
  close(targets: readonly string[], stops: ReadonlySet<string>): void {
    if (!targets.some((t) => this.has(t))) return;
    for (let i = this.names.length - 1; i >= 0; i--) {
      const name = this.names[i] ?? '';
      if (targets.includes(name)) {
        while (this.names.length > i) this.pop();
        return;
      }
      if (stops.has(name)) return;
    }
  }

  /** The end tags HTML lets authors leave out, closed by the start tag `name`. */
  closeImplied(name: string): void {
    if (CLOSES_P.has(name)) this.close(['p'], BUTTON_SCOPE);
    if (HEADINGS.has(name) && HEADINGS.has(this.top() ?? '')) this.pop();
    switch (name) {
      case 'li': {
        this.close(['li'], LIST_SCOPE);
        return;
      }
      case 'dd':
      case 'dt': {
        this.close(['dd', 'dt'], DL_SCOPE);
        return;
      }
      case 'td':
      case 'th': {
        this.close(['td', 'th'], TABLE_SCOPE);
        return;
      }
      case 'tr': {
        this.close(['tr'], TABLE_SCOPE);
        return;
      }
      case 'thead':
      case 'tbody':
      case 'tfoot': {
        this.close(['thead', 'tbody', 'tfoot'], TABLE_SCOPE);
        return;
      }
      case 'table': {
        // A table directly inside a table (no cell between) ends the first one.
        this.close(['table'], CELL_SCOPE);
        return;
      }
      case 'option':
      case 'optgroup':
        if (this.top() === 'option') this.pop();
        if (name === 'optgroup' && this.top() === 'optgroup') this.pop();
        return;
      case 'a':
      case 'button': {
        this.close([name], SCOPE);
        return;
      }
    }
  }
}

interface Limited {
  html: string;
  /** Start tags dropped because they nested deeper than the cap. */
  dropped: number;
}

/** `html` with elements nested deeper than `maxDepth` unwrapped (unchanged when none are). */
export function limitNesting(html: string, maxDepth = MAX_HTML_DEPTH): Limited {
  const open = new OpenElements();
  /** Per name, start tags dropped whose end tag has not come yet. */
  const pending = new Map<string, number>();
  const parts: string[] = [];
  let copied = 0;
  let dropped = 0;
  const drop = (start: number, end: number, name: string) => {
    parts.push(html.slice(copied, start), INLINE.has(name) ? '' : ' ');
    copied = end;
  };

  let i = 0;
  for (;;) {
    const lt = html.indexOf('<', i);
    if (lt < 0) break;
    const next = html.charCodeAt(lt + 1);
    const foreign = open.has('svg') || open.has('math');
    if (next === 0x21 /* ! */ || next === 0x3f /* ? */) {
      i = skipMarkup(html, lt, foreign);
      continue;
    }
    const isEnd = next === 0x2f; /* / */
    const nameStart = isEnd ? lt + 2 : lt + 1;
    if (!isLetter(html.charCodeAt(nameStart))) {
      // `</>` is dropped by the parser, `</…` without a name is a comment, a lone `<` is text.
      i = isEnd ? skipMarkup(html, lt, foreign) : lt + 1;
      continue;
    }
    let nameEnd = nameStart + 1;
    while (nameEnd < html.length && !endsName(html.charCodeAt(nameEnd), false)) nameEnd++;
    const name = html.slice(nameStart, nameEnd).toLowerCase();
    const tag = scanAttributes(html, nameEnd);
    if (tag === null) break;
    i = tag.end;

    if (isEnd) {
      const waiting = pending.get(name) ?? 0;
      if (waiting > 0) {
        pending.set(name, waiting - 1);
        drop(lt, tag.end, name);
      } else if (open.has(name)) {
        open.close([name], NOWHERE);
      }
      continue;
    }
    if (RAW_TEXT.has(name) && !foreign) {
      const close = rawTextEnd(html, name, tag.end);
      if (close < 0) break;
      i = close;
      continue;
    }
    if (name === 'plaintext' && !foreign) break; // the rest of the file is text
    if (VOID.has(name) || SINGLETONS.has(name)) continue;
    if (tag.selfClosing && (foreign || name === 'svg' || name === 'math')) continue;
    if (name === 'form' && open.has('form')) continue; // the parser ignores a nested form
    // At the cap every start tag is dropped, even one that would first close its open sibling
    // (`<li>`, `<p>`): kept, those siblings would each add a text node at the deepest level, and
    // turndown reads every ancestor's whole text once per node.
    if (open.depth < maxDepth) open.closeImplied(name);
    if (open.depth >= maxDepth) {
      dropped++;
      pending.set(name, (pending.get(name) ?? 0) + 1);
      drop(lt, tag.end, name);
    } else {
      open.push(name);
    }
  }
  if (dropped === 0) return { html, dropped };
  parts.push(html.slice(copied));
  return { html: parts.join(''), dropped };
}

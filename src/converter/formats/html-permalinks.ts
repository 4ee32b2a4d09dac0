/**
 * Permalink anchors of documentation generators: Sphinx's `<a class="headerlink">¶</a>`, MkDocs'
 * `headerlink` (`¶`, `#`) and `toclink`, Docusaurus' `hash-link`, VitePress' and markdown-it's
 * `header-anchor`, rustdoc's `anchor` (`§`). They are navigation, not text: left in, every heading
 * (hence every section trail of every chunk) ends in `[¶](#… "Permalink to this heading")`. Pure,
 * on the few DOM members turndown's nodes have; `html.ts` turns them into turndown rules.
 */

/** The members of a DOM node read here (the project compiles without the DOM lib). */
export interface AnchorNode {
  nodeName: string;
  parentNode: AnchorNode | null;
  textContent: string | null;
  getAttribute?: (name: string) => string | null;
}

/** Classes generators give a heading's permalink anchor. */
const PERMALINK_CLASSES = new Set([
  'headerlink',
  'header-anchor',
  'hash-link',
  'anchorjs-link',
  'anchor-link',
  'permalink',
  'anchor',
]);

/**
 * The text of an anchor that is only a permalink sign: pilcrow, section sign, `#`, link or anchor
 * emoji, or nothing visible (zero-width spaces: Docusaurus, VitePress draw the sign in CSS).
 */
const SIGN_ONLY = /^[\s\u200B-\u200D\u2060\uFEFF¶§#⁋🔗⚓]*$/u;

const HEADINGS = new Set(['H1', 'H2', 'H3', 'H4', 'H5', 'H6']);

/** A link to a place on this page (`#id`), not to another document. */
const toThisPage = (a: AnchorNode) => /^\s*#/.test(a.getAttribute?.('href') ?? '');

const classes = (a: AnchorNode) => (a.getAttribute?.('class') ?? '').toLowerCase().split(/\s+/);

/** Whether `node` lies inside a heading (`h1`–`h6`). */
export function inHeading(node: AnchorNode): boolean {
  for (let p = node.parentNode; p !== null; p = p.parentNode)
    if (HEADINGS.has(p.nodeName.toUpperCase())) return true;
  return false;
}

/**
 * Whether an element is a permalink anchor to drop with its text: a link to this page that a
 * generator's class marks as one, or whose whole text is a permalink sign (a `#`-link titled `¶`
 * beside a Sphinx definition, say). A link to this page with words in it is a cross-reference.
 */
export function isPermalink(node: AnchorNode): boolean {
  if (node.nodeName.toUpperCase() !== 'A' || !toThisPage(node)) return false;
  const text = node.textContent ?? '';
  if (SIGN_ONLY.test(text)) return true;
  return classes(node).some((c) => PERMALINK_CLASSES.has(c)) && text.trim().length <= 2;
}

/**
 * Whether an element is a link wrapped around a heading's own text (MkDocs' `toclink` with
 * `anchorlink: true`, any heading linking to itself): the words stay, the link goes, so the
 * heading reads `## Setup`, not `## [Setup](#setup)`.
 */
export function isSelfLink(node: AnchorNode): boolean {
  if (node.nodeName.toUpperCase() !== 'A' || !toThisPage(node)) return false;
  return classes(node).includes('toclink') || inHeading(node);
}

/**
 * Frozen copy, as of migration 0018, of knowledge/search/keyword-text.ts (visibleText, keywordText). Migrations import nothing from
 * knowledge/: editing the live code must never change what an old migration writes. Do not edit to
 * follow the live code; new keyword text is a new migration (and a new KEYWORD_TEXT there).
 */
import { identifierTokens } from './identifiers.js';
import { koreanNouns } from './korean.js';
import { segmentWords } from '../0013_segmented_keywords/segment.js';

/** A markdown link's destination and title: no reader sees them (`[join()](os.path.html#…)`). */
const LINK_TARGET = /\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+(?:"[^"]*"|'[^']*'))?\)/g;
/** A markdown backslash escape of punctuation (`emplace\_back`). */
const ESCAPE = /\\([!-/:-@[-`{-~])/g;

/**
 * The text a reader of the rendered markdown sees, as far as words go: links without their
 * destinations and titles, punctuation without its backslash escapes. A link list (a table of
 * contents, a "see also" table) no longer names each target three times, and `emplace\_back`
 * is the identifier it shows.
 */
export function visibleText(text: string): string {
  let out = text;
  if (out.includes('](')) out = out.replace(LINK_TARGET, ']');
  if (out.includes('\\')) out = out.replace(ESCAPE, '$1');
  return out;
}

/**
 * The text the keyword indexes read for a document name, section path or chunk text: its
 * visible text (visibleText) with runs of scripts without spaces cut into words (segment.ts),
 * then its identifier tokens after a line break (`where`: a section path defines its last
 * section's term only). Every engine indexes exactly this, so all three count the same words.
 */
export function keywordText(text: string, where: 'text' | 'path' = 'text'): string {
  const visible = visibleText(text);
  const extra = identifierTokens(visible, where);
  koreanNouns(visible, extra);
  const segmented = segmentWords(visible);
  return extra.length === 0 ? segmented : `${segmented}\n${extra.join(' ')}`;
}

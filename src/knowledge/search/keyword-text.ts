/**
 * The text the keyword indexes of both engines read for a document name, section path or chunk
 * text (keywordText): its visible words, runs of scripts without spaces cut into words
 * (segment.ts), then extra tokens after a line break: the identifiers' (identifiers.ts) and the
 * nouns of Korean words with a particle attached (데이터를 → 데이터). FTS5's table, the
 * in-process copy and PostgreSQL's rows are all made from exactly this text, so the three count
 * the same words; a query asks for the same tokens (query-terms.ts).
 */
import { identifierTokens } from './identifiers.js';
import { koreanNouns } from './korean.js';
import { segmentWords } from './segment.js';

/**
 * The version of keywordText's output: stored with what was made from it (snapshots), so a
 * change of the rules is never read against the old tokens.
 */
export const KEYWORD_TEXT = 'identifiers 1';

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

/**
 * Markdown as plain text where the markup would only mislead: the section trail and the text a
 * chunk is embedded from. The converters escape characters that markdown would read as markup
 * (`XML\_ParserCreate`, `1\.`, `\#`); a reader of the trail, and a word-vector model, should see
 * `XML_ParserCreate`. Inside code (fenced blocks, code spans) a backslash is literal and stays.
 */

/** CommonMark: any ASCII punctuation character may be backslash-escaped. */
const isPunct = (c: number): boolean =>
  (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);

/** One line's escapes removed; code spans (`` `…` ``) are copied as they are. */
export function unescapeInline(line: string): string {
  if (!line.includes('\\')) return line;
  let out = '';
  let i = 0;
  while (i < line.length) {
    const c = line.charCodeAt(i);
    if (c === 92 /* \ */ && isPunct(line.charCodeAt(i + 1))) {
      out += line.charAt(i + 1);
      i += 2;
    } else if (c === 96 /* ` */) {
      let run = i;
      while (line.charCodeAt(run) === 96) run++;
      const ticks = line.slice(i, run);
      const close = line.indexOf(ticks, run);
      // A span ends at a run of exactly as many backticks; without one the run is plain text.
      const end = close === -1 ? run : close + ticks.length;
      out += line.slice(i, end);
      i = end;
    } else {
      out += line.charAt(i);
      i++;
    }
  }
  return out;
}

/** A markdown text's escapes removed outside fenced code blocks and code spans. */
export function unescapeMarkdown(markdown: string): string {
  if (!markdown.includes('\\')) return markdown;
  let fence: string | null = null;
  return markdown
    .split('\n')
    .map((line) => {
      const run = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(line);
      const marks = run?.[1] ?? '';
      const rest = run?.[2] ?? '';
      if (fence !== null) {
        if (marks[0] === fence[0] && marks.length >= fence.length && rest.trim() === '')
          fence = null;
        return line;
      }
      if (marks !== '' && !(marks[0] === '`' && rest.includes('`'))) {
        fence = marks;
        return line;
      }
      return unescapeInline(line);
    })
    .join('\n');
}

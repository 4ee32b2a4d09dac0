/**
 * Highlights in MCP passages never break the markdown (src/mcp/safe-highlights.ts): the marked
 * passage, rendered by a markdown parser with its <strong> removed, is the unmarked passage's
 * rendering, and every mark became emphasis. Property-tested over passages of words, code,
 * links, emphasis, HTML comments, headings and lists.
 */
import fc from 'fast-check';
import MarkdownIt from 'markdown-it';
import { describe, expect, it } from 'vitest';
import { markPassage, type HitLike } from '../../../src/mcp/format.js';
import { markableRanges } from '../../../src/mcp/safe-highlights.js';

const md = new MarkdownIt({ html: true });
const render = (text: string) => md.render(text);
const unstrong = (html: string) => html.replace(/<\/?strong>/g, '');

const hit = (content: string, highlights: { start: number; end: number }[]): HitLike => ({
  documentId: 'd',
  documentName: 'n',
  chunkIndex: 0,
  sectionPath: '',
  page: null,
  score: 1,
  content,
  highlights,
});

/** The ranges of every word of `text` (what the retrieve route highlights). */
function words(text: string): { start: number; end: number }[] {
  return [...text.matchAll(/[\p{L}\p{N}]+/gu)].map((m) => ({
    start: m.index,
    end: m.index + m[0].length,
  }));
}

describe('markableRanges', () => {
  it('keeps marks out of code, comments, tags and emphasis; covers inline code and links', () => {
    const text =
      'Use `pump --flow` or see [pump guide](http://x/pump_a) and **pump** <!-- pump --> pump.\n\n```\npump\n```\n';
    const pumps = words(text).filter((r) => text.slice(r.start, r.end) === 'pump');
    const marked = markPassage(hit(text, pumps), 10_000);
    expect(marked).toContain('**`pump --flow`**');
    expect(marked).toContain('**[pump guide](http://x/pump_a)**');
    expect(marked).toContain(' **pump** <!-- pump --> **pump**.');
    expect(marked).toContain('```\npump\n```');
    expect(marked).not.toContain('****');
  });

  it('merges matches separated only by spaces', () => {
    const text = 'replace the pump impeller yearly';
    expect(
      markableRanges(text, [
        { start: 12, end: 16 },
        { start: 17, end: 25 },
      ]),
    ).toEqual([{ start: 12, end: 25 }]);
    expect(
      markPassage(
        hit(text, [
          { start: 12, end: 16 },
          { start: 17, end: 25 },
        ]),
        999,
      ),
    ).toBe('replace the **pump impeller** yearly');
  });

  it('the reported defects: no mark inside code or inside bold', () => {
    const mime = 'Set the `<mime-info>` element; **Report** Quality matters.';
    const out = markPassage(hit(mime, words(mime)), 999);
    expect(out).not.toContain('<**mime**');
    expect(out).not.toContain('****');
    expect(unstrong(render(out))).toBe(unstrong(render(mime)));
  });
});

const word = fc.constantFrom('pump', 'flow', 'valve', 'E4711', 'impeller', 'Über', 'x2', 'set');
const phrase = fc.array(word, { minLength: 1, maxLength: 3 }).map((w) => w.join(' '));
const piece = fc.oneof(
  { weight: 6, arbitrary: phrase },
  { weight: 1, arbitrary: fc.constantFrom(',', '.', ':', '(', ')', '-', '/', '2*3') },
  { weight: 1, arbitrary: phrase.map((p) => `\`${p}\``) },
  { weight: 1, arbitrary: phrase.map((p) => `[${p}](http://example.com/${p.replace(/ /g, '_')})`) },
  { weight: 1, arbitrary: phrase.map((p) => `![${p}](i.png)`) },
  { weight: 1, arbitrary: phrase.map((p) => `*${p}*`) },
  { weight: 1, arbitrary: phrase.map((p) => `**${p}**`) },
  { weight: 1, arbitrary: phrase.map((p) => `_${p}_`) },
  { weight: 1, arbitrary: phrase.map((p) => `<!-- ${p} -->`) },
  { weight: 1, arbitrary: phrase.map((p) => `<span>${p}</span>`) },
  { weight: 1, arbitrary: phrase.map((p) => `\n\n\`\`\`\n${p}\n\`\`\`\n\n`) },
  { weight: 1, arbitrary: phrase.map((p) => `\n\n    ${p}\n\n`) },
  { weight: 1, arbitrary: phrase.map((p) => `\n\n## ${p}\n\n`) },
  { weight: 1, arbitrary: phrase.map((p) => `\n- ${p}\n`) },
  { weight: 1, arbitrary: phrase.map((p) => `__${p}__`) },
  { weight: 1, arbitrary: phrase.map((p) => `***${p}***`) },
  { weight: 1, arbitrary: phrase.map((p) => `\n> ${p}\n`) },
  { weight: 1, arbitrary: phrase.map((p) => `snake_${p.replace(/ /g, '_')}_case`) },
  { weight: 1, arbitrary: phrase.map((p) => `\\*${p}\\*`) },
  { weight: 1, arbitrary: phrase.map((p) => `\n\n| ${p} | x |\n|---|---|\n| ${p} | y |\n\n`) },
  { weight: 1, arbitrary: phrase.map((p) => `<https://example.com/${p.replace(/ /g, '-')}>`) },
);

describe('markPassage: property', () => {
  it('renders the same text with marks as without, and every mark is emphasis', () => {
    fc.assert(
      fc.property(
        fc.array(piece, { minLength: 1, maxLength: 14 }),
        fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }),
        (pieces, pick) => {
          const text = pieces.join(' ');
          const highlights = words(text).filter((_, i) => pick[i % pick.length]);
          const marked = markPassage(hit(text, highlights), 100_000);
          const html = render(marked);
          expect(unstrong(html)).toBe(unstrong(render(text)));
          const marks = markableRanges(text, highlights).length;
          const strong =
            (html.match(/<strong>/g) ?? []).length - (render(text).match(/<strong>/g) ?? []).length;
          expect(strong).toBe(marks);
        },
      ),
      { numRuns: 400 },
    );
  });
});

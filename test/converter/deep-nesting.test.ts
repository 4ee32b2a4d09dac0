/**
 * Deeply nested documents (issue 11): 100,000 levels of HTML, JSON, markdown and office XML went
 * through the real converter for minutes or overflowed its stack. Each must now convert with its
 * text (or fail with a clear error) instead of running into the runner's timeout. Speed itself
 * is measured by `npm run bench:convert -- --nesting`, not asserted here.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../../src/converter/contract.js';
import { htmlToMarkdown } from '../../src/converter/formats/html.js';
import { limitNesting, MAX_HTML_DEPTH } from '../../src/converter/formats/html-nesting.js';
import { jsonToMarkdown, writeJson } from '../../src/converter/formats/json.js';
import { convert, type Run } from './fixtures/documents.js';
import { docxParts, odf } from './fixtures/office-docs.js';
import { zip } from './fixtures/office-zip.js';
import { ensureConverterBuilt } from './helpers.js';

beforeAll(() => {
  ensureConverterBuilt();
}, 180_000);

const DEPTH = 100_000;
/** Generous: the old code ran for minutes; a converted file takes about a second. */
const KILL_MS = 60_000;
const TEST_MS = 90_000;

const nest = (open: string, inner: string, close: string, n = DEPTH) =>
  open.repeat(n) + inner + close.repeat(n);

function converted(run: Run, ...words: string[]) {
  expect(run.stderr).not.toMatch(/call stack/i);
  expect(run.code, run.stderr).toBe(0);
  for (const word of words) expect(run.markdown).toContain(word);
}

describe('100,000 levels deep, through aps-convert', () => {
  const html: [string, string][] = [
    ['div', nest('<div>', 'deepest', '</div>')],
    ['ul/li', nest('<ul><li>', 'deepest', '</li></ul>')],
    ['table in table', nest('<table><tr><td>', 'deepest', '</td></tr></table>')],
    ['blockquote', nest('<blockquote>', 'deepest', '</blockquote>')],
    ['span (inline)', nest('<span class="s">', 'deepest', '</span>')],
    ['ol/li with text at every level', nest('<ol><li>level ', 'deepest', '</li></ol>')],
  ];
  it.each(html)(
    'HTML %s converts, with its text and what follows',
    async (_name, body) => {
      const run = await convert('deep.html', `<h1>Top</h1>${body}<p>after</p>`, [], {}, KILL_MS);
      converted(run, 'Top', 'deepest', 'after');
      expect(run.meta?.warnings).toEqual([
        expect.stringContaining(`more than ${MAX_HTML_DEPTH} levels deep`),
      ]);
    },
    TEST_MS,
  );

  it(
    'HTML whose list items are never closed keeps every item',
    async () => {
      const run = await convert('open.html', '<ul><li>word '.repeat(DEPTH), [], {}, KILL_MS);
      converted(run);
      expect(run.markdown?.match(/word/g)).toHaveLength(DEPTH);
    },
    TEST_MS,
  );

  const json: [string, string][] = [
    ['array', nest('[', '"deepest"', ']')],
    ['object', nest('{"a":', '"deepest"', '}')],
    ['object of arrays', nest('{"k":[', '"deepest"', ']}', DEPTH / 2)],
  ];
  it.each(json)(
    'JSON %s converts',
    async (_name, text) => {
      const run = await convert('deep.json', text, [], {}, KILL_MS);
      converted(run, 'deepest');
      expect(run.meta?.warnings).toEqual([expect.stringContaining('levels deep')]);
    },
    TEST_MS,
  );

  it(
    'JSON Lines with a deep line converts',
    async () => {
      const run = await convert(
        'deep.jsonl',
        `{"a":1}\n${nest('[', '"deepest"', ']')}\n`,
        [],
        {},
        KILL_MS,
      );
      converted(run, 'deepest');
    },
    TEST_MS,
  );

  it(
    'markdown: a 100,000-level blockquote and a 1,000-level indented list pass through',
    async () => {
      const quote = await convert('q.md', `${'>'.repeat(DEPTH)} deepest\n`, [], {}, KILL_MS);
      converted(quote, 'deepest');
      const lines = Array.from({ length: 1000 }, (_, i) => `${'  '.repeat(i)}- item ${i}`);
      const list = await convert('list.md', `${lines.join('\n')}\n`, [], {}, KILL_MS);
      converted(list, 'item 0', 'item 999');
      expect(list.markdown).toBe(`${lines.join('\n')}\n`);
    },
    TEST_MS,
  );

  it(
    'long runs of blanks in text and in CSV cells convert',
    async () => {
      const blank = ' '.repeat(1_000_000);
      converted(await convert('gap.txt', `start${blank}end\n`, [], {}, KILL_MS), 'start', 'end');
      const csv = await convert('gap.csv', `a,b\nstart${blank}end,2\n`, [], {}, KILL_MS);
      converted(csv, 'start', 'end');
    },
    TEST_MS,
  );

  it(
    'DOCX and ODT nested beyond what the office readers accept fail fast, saying why',
    async () => {
      const W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"';
      const p = (t: string) => `<w:p><w:r><w:t>${t}</w:t></w:r></w:p>`;
      const docx = (n: number) => {
        const body = nest('<w:tbl><w:tr><w:tc>', p('deepest'), '</w:tc></w:tr></w:tbl>', n);
        const xml = `<?xml version="1.0"?><w:document ${W}><w:body>${body}</w:body></w:document>`;
        return zip(
          docxParts().map((d) => (d.name === 'word/document.xml' ? { ...d, data: xml } : d)),
        );
      };
      const odt = (n: number) =>
        odf(
          'application/vnd.oasis.opendocument.text',
          '<office:body><office:text>' +
            nest(
              '<text:list><text:list-item>',
              '<text:p>deepest</text:p>',
              '</text:list-item></text:list>',
              n,
            ) +
            '</office:text></office:body>',
        );
      // 1,000 levels: the readers refuse the nesting itself.
      const word = await convert('deep.docx', docx(1000), [], {}, KILL_MS);
      expect(word).toMatchObject({ code: EXIT_CODES.CORRUPT });
      expect(word.stderr).toBe(
        'aps-convert: corrupt file: the DOCX file nests elements too deeply to be read\n',
      );
      const open = await convert('deep.odt', odt(1000), [], {}, KILL_MS);
      expect(open).toMatchObject({ code: EXIT_CODES.CORRUPT });
      expect(open.stderr).toContain('cannot be read (elements nested more than 100 levels deep)');
      // 100,000 levels compress so well that the zip guard refuses them before any XML is read.
      for (const [name, bytes] of [
        ['deeper.docx', docx(DEPTH)],
        ['deeper.odt', odt(DEPTH)],
      ] as const) {
        const run = await convert(name, bytes, [], {}, KILL_MS);
        expect(run.code, run.stderr).toBe(EXIT_CODES.TOO_LARGE);
        expect(run.stderr).toMatch(/decompression bomb/);
      }
    },
    TEST_MS,
  );
});

describe('limitNesting', () => {
  const same = (html: string) => {
    expect(limitNesting(html, 8)).toEqual({ html, dropped: 0 });
  };

  it('returns ordinary markup unchanged, including end tags HTML lets authors omit', () => {
    same('<div><div><p>a<p>b<p>c</div></div>');
    same(`<ul>${'<li>item'.repeat(50)}</ul><dl>${'<dt>t<dd>d'.repeat(50)}</dl>`);
    same(`<table>${'<tr><td>a<td>b'.repeat(50)}</table><select>${'<option>o'.repeat(50)}</select>`);
    same(`<h1>a<h2>b<h3>c${'<p>x<br><img src=a.png><hr>'.repeat(50)}`);
    same(`${'<a href=x>link'.repeat(50)}${'<table><table>'.repeat(20)}`);
    // Tags inside comments, scripts, styles and quoted attributes are not tags.
    same(`<!-- ${'<div>'.repeat(50)} --><script>${'<div>'.repeat(50)}</script>`);
    same(`<style>${'<b>'.repeat(50)}</style><div title="${'<div>'.repeat(50)}">x</div>`);
    same(`<svg>${'<path d="M0"/>'.repeat(50)}</svg>`);
  });

  it('drops tags beyond the cap and keeps their text, words apart', () => {
    const result = limitNesting(nest('<div>', 'x', '</div>', 12) + '<p>after</p>', 8);
    expect(result.dropped).toBe(4);
    expect(result.html).toBe(`${'<div>'.repeat(8)}    x    ${'</div>'.repeat(8)}<p>after</p>`);
    expect(limitNesting(nest('<b>', 'x', '</b>', 10), 8).html).toBe(
      `${'<b>'.repeat(8)}x${'</b>'.repeat(8)}`,
    );
  });

  it('property: the text of any nesting survives the cap, in order', () => {
    const tags = ['div', 'span', 'ul', 'li', 'p', 'table', 'td', 'b', 'blockquote'];
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom(...tags), fc.stringMatching(/^[a-z]{1,5}$/)), {
          maxLength: 60,
        }),
        (levels) => {
          const html =
            levels.map(([t, w]) => `<${t}>${w} `).join('') +
            [...levels]
              .reverse()
              .map(([t]) => `</${t}>`)
              .join('');
          const words = levels.map(([, w]) => w).join(' ');
          const text = (s: string) =>
            htmlToMarkdown(s, 4)
              .markdown.replace(/[^a-z]+/g, ' ')
              .trim();
          expect(text(html).split(' ')).toEqual(words === '' ? [''] : words.split(' '));
        },
      ),
    );
  });
});

describe('JSON printing', () => {
  it('property: writeJson without a depth cap is JSON.stringify(value, null, 2)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const v = JSON.parse(JSON.stringify(value)) as Parameters<typeof writeJson>[0];
        expect(writeJson(v, Infinity)).toBe(JSON.stringify(v, null, 2));
      }),
    );
  });

  it('writes levels below the cap on one line', () => {
    expect(writeJson({ a: [[1, { b: [] }]] }, 2)).toBe('{\n  "a": [\n    [1,{"b":[]}]\n  ]\n}');
    const { markdown, warnings } = jsonToMarkdown(nest('[', '1', ']', 150));
    expect(markdown).toContain(`${'  '.repeat(100)}${'['.repeat(50)}1${']'.repeat(50)}\n`);
    expect(warnings).toHaveLength(1);
  });
});

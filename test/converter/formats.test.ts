/** The pure format converters: no processes, no files. */
import { describe, expect, it } from 'vitest';
import { csvToMarkdown, sniffDelimiter } from '../../src/converter/formats/csv.js';
import { htmlToMarkdown } from '../../src/converter/formats/html.js';
import { looksLikeHtml } from '../../src/converter/formats/detect.js';
import { convertText } from '../../src/converter/formats/index.js';
import { jsonLinesToMarkdown, jsonToMarkdown } from '../../src/converter/formats/json.js';
import { escapeCell, fenced, renderTables } from '../../src/converter/formats/markdown.js';
import {
  decodeText,
  looksBinary,
  normalizeText,
  passThrough,
} from '../../src/converter/formats/text.js';

const bytes = (text: string) => new TextEncoder().encode(text);

describe('html', () => {
  it('turns a table with a header row into a GFM table', () => {
    const { markdown } = htmlToMarkdown(
      '<table><thead><tr><th>Name</th><th>Price</th></tr></thead>' +
        '<tbody><tr><td>Tea</td><td>3</td></tr><tr><td>Coffee</td><td>4</td></tr></tbody></table>',
    );
    expect(markdown).toBe('| Name | Price |\n| --- | --- |\n| Tea | 3 |\n| Coffee | 4 |\n');
  });

  it('uses the first row as header when there is no <th>, escapes pipes, pads rows', () => {
    const { markdown } = htmlToMarkdown(
      '<table><caption>Prices</caption><tr><td>a</td><td>b</td></tr>' +
        '<tr><td>x|y</td><td><p>one</p><p>two</p></td></tr>' +
        '<tr><td colspan="2">wide</td></tr><tr><td>short</td></tr></table>',
    );
    expect(markdown).toBe(
      '**Prices**\n\n| a | b |\n| --- | --- |\n| x\\|y | one<br>two |\n| wide |  |\n| short |  |\n',
    );
    expect(markdown).not.toContain('<table');
  });

  it('unwraps layout tables (one row or one column)', () => {
    const { markdown } = htmlToMarkdown('<table><tr><td><p>Just a box</p></td></tr></table>');
    expect(markdown).toBe('Just a box\n');
  });

  it('fences every <pre>, so its `# comment` lines never become headings', () => {
    const { markdown } = htmlToMarkdown(`<html><body><h2>Build statements</h2>
      <pre class="screen">cflags = -Wall
rule cc
  command = gcc $cflags -c $in -o $out

# If left unspecified, builds get the outer $cflags.
build link_pool.o: cc foo.c</pre><p>After.</p>
      <pre class="programlisting language-c">#define BZ_NO_STDIO 1
/* a \`\`\` fence inside */</pre></body></html>`);
    expect(markdown).toContain(
      '```\ncflags = -Wall\nrule cc\n  command = gcc $cflags -c $in -o $out\n\n' +
        '# If left unspecified, builds get the outer $cflags.\nbuild link_pool.o: cc foo.c\n```',
    );
    expect(markdown).toContain('````c\n#define BZ_NO_STDIO 1\n/* a ``` fence inside */\n````');
  });

  it('keeps headings, lists, code and links; drops scripts, styles, nav and hidden parts', () => {
    const { markdown } = htmlToMarkdown(`<!doctype html><html><head><title>Page</title>
      <style>h1 { color: red }</style><script>alert("x")</script></head><body>
      <nav><a href="/">Home</a> <a href="/about">About</a></nav>
      <h1>Guide</h1><h2>Install</h2><p>Run <code>npm i</code>, see <a href="https://x.test">docs</a>.</p>
      <ul><li>one</li><li>two</li></ul>
      <pre><code class="language-js">const a = 1;</code></pre>
      <div hidden>secret</div><span aria-hidden="true">icon</span>
      <img src="data:image/png;base64,AAAA" alt="logo"><noscript>enable js</noscript>
      </body></html>`);
    expect(markdown).toContain('# Guide\n\n## Install');
    expect(markdown).toContain('Run `npm i`, see [docs](https://x.test).');
    expect(markdown).toMatch(/- +one\n- +two/);
    expect(markdown).toContain('```js\nconst a = 1;\n```');
    expect(markdown).toContain('logo');
    for (const gone of [
      'alert',
      'color: red',
      'Home',
      'About',
      'secret',
      'icon',
      'Page',
      'base64',
      'enable js',
    ]) {
      expect(markdown).not.toContain(gone);
    }
  });

  it('recognises HTML documents by their start', () => {
    expect(looksLikeHtml('\uFEFF  <!DOCTYPE html>\n<html>')).toBe(true);
    expect(looksLikeHtml('<!-- saved page --><html lang="en">')).toBe(true);
    expect(looksLikeHtml('<?xml version="1.0"?><html xmlns="x">')).toBe(true);
    expect(looksLikeHtml('Some text mentioning <html> later')).toBe(false);
    expect(looksLikeHtml('<htmlfoo>')).toBe(false);
  });
});

describe('csv', () => {
  it('handles quotes, commas, pipes and newlines inside cells', () => {
    const { markdown, warnings } = csvToMarkdown(
      'name,comment\r\n"Smith, J.","said ""hi"""\r\n"multi\nline",a|b\r\n',
    );
    expect(markdown).toBe(
      '| name | comment |\n| --- | --- |\n| Smith, J. | said "hi" |\n| multi<br>line | a\\|b |\n',
    );
    expect(warnings).toEqual([]);
  });

  it('reads TSV and sniffs ; separated files', () => {
    expect(csvToMarkdown('a\tb\n1,5\t2\n', { delimiter: '\t' }).markdown).toBe(
      '| a | b |\n| --- | --- |\n| 1,5 | 2 |\n',
    );
    expect(sniffDelimiter('a;b;c\n1;2;3')).toBe(';');
    expect(sniffDelimiter('"x;y",b\n')).toBe(',');
    expect(csvToMarkdown('a;b\n1;2\n').markdown).toContain('| 1 | 2 |');
  });

  it('pads ragged rows and warns', () => {
    const { markdown, warnings } = csvToMarkdown('a,b\n1\n1,2,3\n');
    expect(markdown).toBe('| a | b |  |\n| --- | --- | --- |\n| 1 |  |  |\n| 1 | 2 | 3 |\n');
    expect(warnings).toEqual([expect.stringContaining('different number of columns')]);
  });

  it('splits large sheets into sections that repeat the header', () => {
    const rows = Array.from({ length: 5 }, (_, i) => `${i + 1},v${i + 1}`).join('\n');
    const { markdown } = csvToMarkdown(`n,v\n${rows}\n`, { rowsPerTable: 2 });
    expect(markdown.match(/^## Rows .*$/gm)).toEqual(['## Rows 1–2', '## Rows 3–4', '## Rows 5–5']);
    expect(markdown.match(/\| n \| v \|/g)).toHaveLength(3);
    expect(markdown).toContain('## Rows 5–5\n\n| n | v |\n| --- | --- |\n| 5 | v5 |\n');
  });

  it('yields nothing for an empty sheet', () => {
    expect(csvToMarkdown('\n\n').markdown).toBe('');
  });
});

describe('json', () => {
  it('renders an array of flat objects as a table (columns in first-seen order)', () => {
    const { markdown } = jsonToMarkdown('[{"id":1,"name":"a|b"},{"id":2,"ok":true,"name":null}]');
    expect(markdown).toBe(
      '| id | name | ok |\n| --- | --- | --- |\n| 1 | a\\|b |  |\n| 2 |  | true |\n',
    );
  });

  it('renders small nested documents as one fenced json block', () => {
    expect(jsonToMarkdown('{"a":{"b":[1,2]}}').markdown).toBe(
      '```json\n{\n  "a": {\n    "b": [\n      1,\n      2\n    ]\n  }\n}\n```\n',
    );
  });

  it('splits large objects into a section per top-level key', () => {
    const doc = { title: 'Report', rows: [{ a: 1 }, { a: 2 }], nested: { deep: [1, { x: 2 }] } };
    const { markdown } = jsonToMarkdown(JSON.stringify(doc), { smallBytes: 10 });
    expect(markdown).toContain('## title\n\nReport');
    expect(markdown).toContain('## rows\n\n| a |\n| --- |\n| 1 |\n| 2 |');
    expect(markdown).toContain('## nested\n\n```json\n{\n  "deep": [');
  });

  it('splits large non-table arrays into item blocks', () => {
    const doc = [{ a: [1] }, { a: [2] }, { a: [3] }];
    const { markdown } = jsonToMarkdown(JSON.stringify(doc), { smallBytes: 10, itemsPerBlock: 2 });
    expect(markdown.match(/^## Items .*$/gm)).toEqual(['## Items 1–2', '## Items 3–3']);
  });

  it('uses a fence longer than any backtick run in the data', () => {
    expect(jsonToMarkdown('{"code":"```js"}').markdown.startsWith('````json\n')).toBe(true);
  });

  it('reads JSON Lines, and reports empty documents as empty', () => {
    expect(jsonLinesToMarkdown('{"a":1}\n\n{"a":2}\n').markdown).toBe(
      '| a |\n| --- |\n| 1 |\n| 2 |\n',
    );
    expect(() => jsonLinesToMarkdown('{"a":1}\nnope\n')).toThrow(/line 2/);
    for (const empty of ['{}', '[]', 'null', '"  "'])
      expect(jsonToMarkdown(empty).markdown).toBe('');
  });
});

describe('text', () => {
  it('normalises CRLF, strips the BOM, NULs and control characters', () => {
    expect(normalizeText('\uFEFFa\r\nb\rc\u0000d\u0007e\tf\n')).toBe('a\nb\ncde\tf\n');
    expect(passThrough('\n\nhello  \n\n\n')).toBe('\n\nhello\n');
    expect(passThrough(' \n\t ')).toBe('');
  });

  it('replaces invalid UTF-8 and warns', () => {
    const decoded = decodeText(new Uint8Array([0x63, 0x61, 0x66, 0xe9, 0x21]));
    expect(decoded.text).toBe('caf\uFFFD!');
    expect(decoded.warnings).toEqual([expect.stringContaining('1 invalid byte sequence')]);
  });

  it('decodes UTF-16 with a BOM and honours an HTML charset', () => {
    const utf16 = new Uint8Array([0xff, 0xfe, 0x68, 0x00, 0x69, 0x00]);
    expect(decodeText(utf16)).toMatchObject({ text: 'hi', encoding: 'utf-16le', warnings: [] });
    const latin = new Uint8Array([...bytes('<meta charset="windows-1252"><p>caf'), 0xe9]);
    expect(decodeText(latin, { htmlCharset: true }).text).toContain('café');
  });

  it('tells text from binary', () => {
    expect(looksBinary(bytes('plain text\twith tabs\r\n\u001b[1mansi'))).toBe(false);
    expect(looksBinary(new Uint8Array([0x61, 0x00, 0x62]))).toBe(true);
    expect(looksBinary(new Uint8Array([1, 2, 3, 4, 0x61, 0x62]))).toBe(true);
    expect(looksBinary(new Uint8Array([0xff, 0xfe, 0x61, 0x00]))).toBe(false);
  });
});

describe('convertText', () => {
  it('passes markdown and text through, normalised', () => {
    expect(convertText('markdown', bytes('\uFEFF# Title\r\n\r\nBody\r\n')).markdown).toBe(
      '# Title\n\nBody\n',
    );
  });

  it('indexes a CSV or JSON file that does not parse as plain text, with a warning', () => {
    const json = convertText('json', bytes('{"a": 1,'));
    expect(json.markdown).toBe('{"a": 1,\n');
    expect(json.warnings).toEqual([expect.stringMatching(/not valid JSON .*plain text/)]);
    const csv = convertText('csv', bytes('a,b\n"unclosed,1\n'));
    expect(csv.warnings).toEqual([expect.stringMatching(/not valid CSV .*plain text/)]);
    expect(csv.markdown).toContain('"unclosed,1');
  });

  it('carries decoding warnings through', () => {
    const result = convertText('text', new Uint8Array([0x61, 0xff, 0x62]));
    expect(result).toEqual({
      markdown: 'a\uFFFDb\n',
      warnings: [expect.stringContaining('UTF-8')],
    });
  });
});

describe('markdown helpers', () => {
  it('escapes table cells', () => {
    expect(escapeCell(' a|b\\|c\r\nd \n\n e ')).toBe('a\\|b\\\\\\|c<br>d<br>e');
  });

  it('renders one table when the rows fit', () => {
    expect(renderTables(['h'], [['1']])).toBe('| h |\n| --- |\n| 1 |');
  });

  it('fences code', () => {
    expect(fenced('x', 'json')).toBe('```json\nx\n```');
  });
});

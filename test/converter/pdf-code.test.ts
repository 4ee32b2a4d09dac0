/** Issue 41's listing rules: line numbers apart from the code. */
import { describe, expect, it } from 'vitest';
import { lineNumberLines } from '../../src/converter/formats/pdf/code.js';
import { layoutPages } from '../../src/converter/formats/pdf/layout.js';
import { toLines, type TextRun } from '../../src/converter/formats/pdf/lines.js';

/** A run of 10 pt text, 6 pt per character; monospaced when `mono`. */
const run = (str: string, x: number, y: number, mono: boolean): TextRun => ({
  str,
  x,
  y,
  width: str.length * 6,
  size: 10,
  font: mono ? 'mono' : 'serif',
  mono,
});

const CODE = ['int main(void)', '{', '    int a = 1;', '    return a;', '}'];

function page(numbersMono: boolean): TextRun[] {
  return [
    run('The program below returns one, as every run of it shows when it ends.', 72, 720, false),
    ...CODE.flatMap((code, i) => [
      // Line numbers right-aligned in a margin of their own, the code 12 pt to their right.
      run(String(i + 1), 84 - 6 * String(i + 1).length, 700 - 12 * i, numbersMono),
      run(code.trimStart(), 96 + 6 * (code.length - code.trimStart().length), 700 - 12 * i, true),
    ]),
  ];
}

describe('line numbers of listings', () => {
  it('drops numbers set in a text font beside the code, keeping its indentation', () => {
    const [md] = layoutPages([{ kind: 'text', lines: toLines(page(false)) }]);
    expect(md).toContain(['```', ...CODE, '```'].join('\n'));
    expect(md).not.toMatch(/^\d/m);
  });

  it('keeps numbers set in the code font, apart from the code by their spacing', () => {
    // They may be option values (gnuplot's `0   default`, `1   axis coordinates`).
    const [md] = layoutPages([{ kind: 'text', lines: toLines(page(true)) }]);
    expect(md).toContain(['```', '1  int main(void)', '2  {', '3      int a = 1;'].join('\n'));
  });

  it('keeps numbers that do not count up, or stand beside prose', () => {
    const lines = toLines([
      run('3', 72, 700, false),
      run('x = 1;', 96, 700, true),
      run('7', 72, 688, false),
      run('y = 2;', 96, 688, true),
      run('9', 72, 676, false),
      run('z = 3;', 96, 676, true),
    ]);
    expect(lineNumberLines(lines).size).toBe(0);
  });
});

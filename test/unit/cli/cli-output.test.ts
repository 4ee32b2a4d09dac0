/** The CLI's pure output helpers: tables, paths, URLs, the bar line and the status line. */
import { describe, expect, it } from 'vitest';
import { redactedUrl, shownPath, table } from '../../../src/cli/output.js';
import { barLine, formatDuration, Progress } from '../../../src/cli/progress.js';
import { StatusLine } from '../../../src/cli/terminal.js';

const ERASE = '\r\u001b[2K';

class Screen {
  text = '';
  constructor(
    readonly isTTY: boolean,
    readonly columns = 80,
  ) {}
  write(chunk: string): boolean {
    this.text += chunk;
    return true;
  }
}

describe('table', () => {
  it('pads columns under their headers, no trailing spaces', () => {
    expect(
      table(
        ['ID', 'NAME', 'NOTE'],
        [
          ['1', 'alpha', ''],
          ['22', 'b', 'x'],
        ],
      ),
    ).toBe('ID  NAME   NOTE\n1   alpha\n22  b      x');
  });
});

describe('shownPath and redactedUrl', () => {
  it('shows paths under the working directory relatively, others absolutely', () => {
    expect(shownPath('/srv/app/data/aps.sqlite', '/srv/app')).toBe('./data/aps.sqlite');
    expect(shownPath('/srv/app', '/srv/app')).toBe('.');
    expect(shownPath('/var/lib/aps', '/srv/app')).toBe('/var/lib/aps');
  });
  it('never shows a PostgreSQL password', () => {
    expect(redactedUrl('postgres://aps:s3cret@db:5432/aps?password=x')).toBe(
      'postgres://aps@db:5432/aps',
    );
    expect(redactedUrl('not a url')).not.toContain('not a url');
  });
});

describe('progress bar', () => {
  it('formats durations and the ETA (unknown until the first item is done)', () => {
    expect(formatDuration(65_000)).toBe('1:05');
    expect(formatDuration(3_723_000)).toBe('1:02:03');
    expect(barLine(0, 4, 0, 'a', 8)).toBe('[--------] 0/4   0%  0:00 elapsed  ETA --:--  a');
    expect(barLine(1, 4, 10_000, 'b', 8)).toBe('[##------] 1/4  25%  0:10 elapsed  ETA 0:30  b');
    expect(barLine(4, 4, 40_000, 'c', 8)).toBe('[########] 4/4 100%  0:40 elapsed  ETA 0:00  c');
  });

  it('on a terminal: log lines erase the bar, print, and the bar comes back; end erases it', () => {
    const screen = new Screen(true);
    const status = new StatusLine(screen);
    let now = 0;
    const progress = new Progress(status, 2, () => now);
    progress.begin('one');
    status.write('a log line\n');
    now = 5000;
    progress.step();
    progress.end();
    const bar0 = barLine(0, 2, 0, 'one');
    expect(screen.text).toBe(
      `${ERASE}${bar0}${ERASE}a log line\n${bar0}${ERASE}${barLine(1, 2, 5000, 'one')}${ERASE}`,
    );
    status.write('after\n');
    expect(screen.text.endsWith(`${ERASE}after\n`)).toBe(true);
  });

  it('cuts the bar to the terminal width so it never wraps', () => {
    const screen = new Screen(true, 40);
    new StatusLine(screen).show('x'.repeat(100));
    expect(screen.text).toBe(`${ERASE}${'x'.repeat(38)}…`);
  });

  it('without a terminal: plain lines, nothing erased', () => {
    const screen = new Screen(false);
    const status = new StatusLine(screen);
    const progress = new Progress(status, 2);
    progress.begin('one');
    progress.step();
    status.write('log\n');
    progress.begin('two');
    progress.step();
    progress.end();
    expect(screen.text).toBe('reindexing 1/2 one\nlog\nreindexing 2/2 two\n');
  });
});

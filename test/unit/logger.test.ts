/** Log format choice, and that credentials stay redacted in both formats. */
import { describe, expect, it } from 'vitest';
import { chooseLogFormat, createLogger, pollingLogLevel } from '../../src/logger.js';
import { LogCapture } from '../helpers.js';

describe('chooseLogFormat', () => {
  it('auto follows the terminal; pretty and json are forced', () => {
    expect(chooseLogFormat('auto', true)).toBe('pretty');
    expect(chooseLogFormat('auto', false)).toBe('json');
    expect(chooseLogFormat('json', true)).toBe('json');
    expect(chooseLogFormat('json', false)).toBe('json');
    expect(chooseLogFormat('pretty', false)).toBe('pretty');
    expect(chooseLogFormat('pretty', true)).toBe('pretty');
  });
});

describe('createLogger', () => {
  const secret = { apiKey: 'aps_SECRETSECRET', nested: { token: 'tok_SECRET' } };

  it('writes JSON lines when the output is not a terminal', () => {
    const out = new LogCapture();
    createLogger({ logLevel: 'info', logFormat: 'auto' }, out, false).info(secret, 'hello');
    const entry = JSON.parse(out.lines[0]!) as Record<string, unknown>;
    expect(entry).toMatchObject({ msg: 'hello', level: 30, apiKey: '[redacted]' });
    expect(out.text).not.toContain('SECRET');
  });

  it('writes one readable line per entry on a terminal, still redacted', () => {
    const out = new LogCapture();
    const log = createLogger({ logLevel: 'info', logFormat: 'auto' }, out, true);
    log.info(secret, 'hello');
    log.warn({ req: { headers: { authorization: 'Bearer abc.SECRET' } } }, 'second');
    expect(out.lines).toHaveLength(2);
    expect(out.lines[0]).toMatch(/INFO.*hello/);
    expect(out.lines[1]).toMatch(/WARN.*second/);
    expect(out.text).toContain('[redacted]');
    expect(out.text).not.toContain('SECRET');
    expect(() => JSON.parse(out.lines[0]!) as unknown).toThrow();
  });

  it('LOG_FORMAT=pretty without a terminal: readable lines, no colour codes', () => {
    const out = new LogCapture();
    createLogger({ logLevel: 'info', logFormat: 'pretty' }, out, false).info('plain');
    expect(out.lines[0]).toMatch(/INFO.*plain/);
    expect(out.text).not.toContain('\u001b[');
  });
});

describe('pollingLogLevel', () => {
  it('hides polls at info, keeps them at debug and trace, never lowers a stricter level', () => {
    expect(pollingLogLevel('info')).toBe('warn');
    expect(pollingLogLevel('debug')).toBe('debug');
    expect(pollingLogLevel('trace')).toBe('trace');
    expect(pollingLogLevel('error')).toBe('error');
    expect(pollingLogLevel('silent')).toBe('silent');
  });
});

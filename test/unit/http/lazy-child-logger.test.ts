/** A request's logger is made at its first line, with the request's bindings, level and redaction. */
import { describe, expect, it, vi } from 'vitest';
import { LazyChildLogger } from '../../../src/http/request-log.js';
import { createLogger } from '../../../src/logger.js';
import { LogCapture } from '../../helpers.js';

function setup(level = 'info') {
  const out = new LogCapture();
  const root = createLogger({ logLevel: level as 'info', logFormat: 'json' }, out, false);
  const child = vi.spyOn(root, 'child');
  return { out, root, child };
}

describe('LazyChildLogger', () => {
  it('makes no pino child until a line is written, and then only one', () => {
    const { out, root, child } = setup();
    const log = new LazyChildLogger(root, { reqId: 'r-1' }, {});
    expect(log.level).toBe('info');
    log.debug({ req: {} }, 'below the level');
    log.silent('never');
    expect(child).not.toHaveBeenCalled();
    log.info({ code: 'X' }, 'first');
    log.warn('second %s', 'line');
    expect(child).toHaveBeenCalledTimes(1);
    const lines = out.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toMatchObject([
      { level: 30, reqId: 'r-1', code: 'X', msg: 'first' },
      { level: 40, reqId: 'r-1', msg: 'second line' },
    ]);
  });

  it('has the route’s level without a child; below it nothing is written', () => {
    const { out, root, child } = setup();
    const log = new LazyChildLogger(root, { reqId: 'r-2' }, { level: 'warn' });
    expect(log.level).toBe('warn');
    expect(child).not.toHaveBeenCalled();
    log.info('hidden');
    log.error('shown');
    expect(out.lines.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(['shown']);
    log.level = 'error';
    expect(log.level).toBe('error');
    log.warn('hidden too');
    expect(out.lines).toHaveLength(1);
  });

  it('keeps the root logger’s redaction, and its children carry the request’s bindings', () => {
    const { out, root } = setup();
    const log = new LazyChildLogger(root, { reqId: 'r-3' }, {});
    log.child({ part: 'upload' }).info({ apiKey: 'aps_SECRETSECRET' }, 'with a secret');
    expect(JSON.parse(out.lines[0]!)).toMatchObject({
      reqId: 'r-3',
      part: 'upload',
      apiKey: '[redacted]',
    });
    expect(out.text).not.toContain('SECRET');
  });
});

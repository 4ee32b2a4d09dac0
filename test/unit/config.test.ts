import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseDuration } from '../../src/config.js';

const dir = mkdtempSync(join(tmpdir(), 'aps-config-'));

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env, dir);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe('loadConfig', () => {
  it('has zero-config defaults', () => {
    const config = loadConfig({}, dir);
    expect(config.port).toBe(4000);
    expect(config.host).toBe('127.0.0.1');
    expect(config.apiPrefix).toBe('/api/v1');
    expect(config.dataDir).toBe(join(dir, 'data'));
    expect(config.database).toEqual({
      driver: 'sqlite',
      filename: join(dir, 'data', 'aps.sqlite'),
    });
    expect(config.jwtSecret).toBeNull();
    expect(config.jwtTtlSeconds).toBe(15 * 60);
    expect(config.queue.agentRunConcurrency).toBeGreaterThanOrEqual(2);
    expect(config.queue.toolExecuteConcurrency).toBeGreaterThanOrEqual(4);
    expect(config.corsOrigins).toEqual([]);
    expect(config.knowledge.hybridCandidates).toBe(40);
  });

  it('accepts PORT=0 (pick a free port) and converts numbers', () => {
    const config = loadConfig({ PORT: '0', QUEUE_AGENT_RUN_CONCURRENCY: '7', JWT_TTL: '8h' }, dir);
    expect(config.port).toBe(0);
    expect(config.queue.agentRunConcurrency).toBe(7);
    expect(config.jwtTtlSeconds).toBe(8 * 3600);
  });

  it('runs more indexing runs than converter workers, never more workers than runs', () => {
    const defaults = loadConfig({}, dir).knowledge;
    expect(defaults.indexConcurrency).toBeGreaterThanOrEqual(4);
    expect(defaults.converterWorkers).toBeGreaterThanOrEqual(1);
    expect(defaults.converterWorkers).toBeLessThan(defaults.indexConcurrency);
    const set = loadConfig({ QUEUE_KNOWLEDGE_INDEX_CONCURRENCY: '6', CONVERTER_WORKERS: '3' }, dir);
    expect(set.knowledge).toMatchObject({ indexConcurrency: 6, converterWorkers: 3 });
    const capped = loadConfig(
      { QUEUE_KNOWLEDGE_INDEX_CONCURRENCY: '2', CONVERTER_WORKERS: '5' },
      dir,
    );
    expect(capped.knowledge.converterWorkers).toBe(2);
  });

  it('lists every bad variable at once', () => {
    const list = problems({
      PORT: 'abc',
      LOG_LEVEL: 'loud',
      API_PREFIX: 'api',
      JWT_TTL: 'forever',
      QUEUE_TOOL_EXECUTE_CONCURRENCY: '0',
      JWT_SECRET: 'short',
    });
    expect(list).toHaveLength(6);
    expect(list.join('\n')).toMatch(/PORT must be an integer/);
    expect(list.join('\n')).toMatch(/LOG_LEVEL must be one of: fatal, error/);
    expect(list.join('\n')).toMatch(/API_PREFIX/);
    expect(list.join('\n')).toMatch(/JWT_TTL/);
    expect(list.join('\n')).toMatch(/QUEUE_TOOL_EXECUTE_CONCURRENCY must be an integer, ≥ 1/);
    expect(list.join('\n')).toMatch(/JWT_SECRET must be at least 32 characters$/m);
  });

  it('never echoes a secret value in its messages', () => {
    const list = problems({ JWT_SECRET: 'tooshort-secret', BOOTSTRAP_API_KEY: 'bad key!' });
    expect(list.join('\n')).not.toContain('tooshort-secret');
    expect(list.join('\n')).not.toContain('bad key!');
  });

  it('reads the metrics settings: off by default, the token never echoed', () => {
    expect(loadConfig({}, dir).metrics).toEqual({ token: null, port: null, host: '127.0.0.1' });
    expect(
      loadConfig({ METRICS_TOKEN: 'm'.repeat(32), METRICS_PORT: '9464' }, dir).metrics,
    ).toEqual({ token: 'm'.repeat(32), port: 9464, host: '127.0.0.1' });
    const list = problems({ METRICS_TOKEN: 'short-metrics-token', METRICS_PORT: '70000' });
    expect(list.join('\n')).toMatch(/METRICS_TOKEN must be at least 32 characters/);
    expect(list.join('\n')).toMatch(/METRICS_PORT must be an integer, ≥ 0, ≤ 65535/);
    expect(list.join('\n')).not.toContain('short-metrics-token');
    expect(problems({ METRICS_TOKEN: `${'m'.repeat(32)} spaced` })).toHaveLength(1);
  });

  it('refuses production without explicit secrets', () => {
    const list = problems({ NODE_ENV: 'production' });
    expect(list).toEqual([
      'JWT_SECRET is required when NODE_ENV=production',
      'API_KEY_SALT is required when NODE_ENV=production',
    ]);
    expect(
      problems({
        NODE_ENV: 'production',
        JWT_SECRET: 'x'.repeat(32),
        API_KEY_SALT: 'y'.repeat(16),
      }),
    ).toEqual([]);
  });

  it('treats empty strings as unset and honours sqlite: URLs', () => {
    expect(loadConfig({ PORT: '', DATABASE_URL: 'sqlite:other.db' }, dir)).toMatchObject({
      port: 4000,
      database: { driver: 'sqlite', filename: join(dir, 'other.db') },
    });
    expect(problems({ DATABASE_URL: 'mysql://x' })).toEqual([
      'DATABASE_URL must be unset, sqlite:<path> or postgres://…',
    ]);
  });

  it('reads an optional .env file, the environment winning', () => {
    const envDir = mkdtempSync(join(tmpdir(), 'aps-dotenv-'));
    writeFileSync(join(envDir, '.env'), 'PORT=5001\nHOST=0.0.0.0\n');
    const config = loadConfig({ HOST: '127.0.0.2' }, envDir);
    expect(config.port).toBe(5001);
    expect(config.host).toBe('127.0.0.2');
  });
});

describe('parseDuration', () => {
  it.each([
    ['900', 900],
    ['30s', 30],
    ['15m', 900],
    ['8h', 28800],
    ['1d', 86400],
  ])('%s → %i s', (text, seconds) => {
    expect(parseDuration(text)).toBe(seconds);
  });
  it('rejects other text', () => {
    expect(() => parseDuration('1w')).toThrow();
  });
});

describe('TRUST_PROXY, JWT_MAX_SESSION, AUDIT_RETENTION_DAYS', () => {
  it('reads a hop count, true, or proxy addresses; refuses what is none of these', () => {
    const trust = (value: string) => loadConfig({ TRUST_PROXY: value }, dir).http.trustProxy;
    expect(loadConfig({}, dir).http.trustProxy).toBe(false);
    expect(trust('false')).toBe(false);
    expect(trust('true')).toBe(true);
    expect(trust('2')).toBe(2);
    expect(trust('10.0.0.0/8, loopback,192.168.1.7')).toEqual([
      '10.0.0.0/8',
      'loopback',
      '192.168.1.7',
    ]);
    expect(problems({ TRUST_PROXY: 'not-an-address' })).toEqual([
      expect.stringMatching(/^TRUST_PROXY: .*not-an-address/),
    ]);
  });

  it('defaults: a 12-hour session, a year of audit', () => {
    const config = loadConfig({}, dir);
    expect(config.jwtMaxSessionSeconds).toBe(12 * 3600);
    expect(config.auditRetentionDays).toBe(365);
    expect(loadConfig({ JWT_MAX_SESSION: '30m' }, dir).jwtMaxSessionSeconds).toBe(1800);
    expect(problems({ AUDIT_RETENTION_DAYS: '0' })).toHaveLength(1);
  });
});

import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startServer } from '../../src/server.js';
import { LogCapture, tempDir, testConfig } from '../helpers.js';

async function start(dir: string, env: Record<string, string> = {}) {
  const printed: string[] = [];
  const logs = new LogCapture();
  const server = await startServer(testConfig(dir, { PORT: '0', ...env }), {
    print: (l) => printed.push(l),
    logStream: logs,
  });
  return { server, printed, logs };
}

describe('startServer', () => {
  it('PORT=0 picks a free port, prints the address, and prints the first key once', async () => {
    const dir = tempDir();
    const { server, printed } = await start(dir);
    try {
      const match = /listening on (http:\/\/127\.0\.0\.1:(\d+))/.exec(printed.join('\n'));
      expect(match).not.toBeNull();
      expect(Number(match![2])).toBeGreaterThan(0);
      expect(match![1]).toBe(server.address);
      const key = /^\s+(aps_\S+)$/m.exec(printed.join('\n'))?.[1];
      expect(key).toBeDefined();
      const res = await fetch(`${server.address}/api/v1/auth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ apiKey: key }),
      });
      expect(res.status).toBe(200);
    } finally {
      await server.close();
    }
    const again = await start(dir);
    try {
      expect(again.printed.join('\n')).not.toMatch(/aps_/);
    } finally {
      await again.server.close();
    }
  });

  it('keeps generated secrets in DATA_DIR (0600): tokens survive a restart', async () => {
    const dir = tempDir();
    const first = await start(dir);
    const key = /^\s+(aps_\S+)$/m.exec(first.printed.join('\n'))![1]!;
    const issued = await first.server.app.inject({
      method: 'POST',
      url: '/api/v1/auth/token',
      payload: { apiKey: key },
    });
    const jwt = issued.json<{ token: string }>().token;
    await first.server.close();
    expect(statSync(join(dir, 'secrets.json')).mode & 0o777).toBe(0o600);

    const second = await start(dir);
    try {
      const res = await second.server.app.inject({
        method: 'GET',
        url: '/api/v1/auth/api-keys',
        headers: { authorization: `Bearer ${jwt}` },
      });
      expect(res.statusCode).toBe(200);
    } finally {
      await second.server.close();
    }
  });

  it('redacts credentials from logs', async () => {
    const { server, logs } = await start(tempDir(), { LOG_LEVEL: 'trace' });
    try {
      const secret = 'aps_this-is-a-secret-key-0000000000000000000';
      await fetch(`${server.address}/api/v1/auth/api-keys`, {
        headers: { authorization: `Bearer ${secret}`, 'x-api-key': secret },
      });
      await fetch(`${server.address}/api/v1/auth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ apiKey: secret }),
      });
      server.app.log.info(
        {
          apiKey: secret,
          nested: { apiKey: secret },
          req: { headers: { authorization: secret, 'x-api-key': secret } },
        },
        'probe',
      );
      expect(logs.text).toContain('probe');
      expect(logs.text).toContain('[redacted]');
      expect(logs.text).not.toContain(secret);
      expect(logs.text).toMatch(/"reqId":"[0-9a-f-]{36}"/);
    } finally {
      await server.close();
    }
  });

  it('finishes in-flight requests on close and refuses new connections', async () => {
    const dir = tempDir();
    const printed: string[] = [];
    const config = testConfig(dir, { PORT: '0' });
    const { buildApp } = await import('../../src/app.js');
    const { createContext } = await import('../../src/context.js');
    const ctx = await createContext(config, { logStream: new LogCapture() });
    const app = await buildApp(ctx);
    let arrived!: () => void;
    const inHandler = new Promise<void>((r) => (arrived = r));
    app.get('/slow', { config: { access: 'public', mutates: false } }, async () => {
      arrived();
      await new Promise((r) => setTimeout(r, 300));
      return { done: true };
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const address = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    printed.push(address);
    const inFlight = fetch(`${address}/slow`).then((r) => r.json());
    // Closes once the request is in its handler (a fixed wait lost the race on a loaded machine).
    await inHandler;
    const closing = app.close();
    await expect(inFlight).resolves.toEqual({ done: true });
    await closing;
    await expect(fetch(`${address}/health`)).rejects.toThrow();
    await ctx.close();
  });
});

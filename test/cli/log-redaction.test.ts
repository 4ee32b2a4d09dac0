/**
 * No credential in any byte the server process writes: the real `aps serve` (dist/cli.js) at every
 * LOG_LEVEL and LOG_REQUESTS setting (and pretty lines), sent the reference console's request
 * (`GET /api/v1/events?apiKey=<key>` with a WebSocket upgrade) and credentials in every position:
 * query parameters of every name, headers, cookies, the path, user:password in an absolute-form
 * request target, a malformed request, a URL to ingest, and a PostgreSQL URL's password.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers.js';

const CLI = resolve(import.meta.dirname, '../../dist/cli.js');
const run = promisify(execFile);

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];
const MODES = ['notable', 'all'];

function baseEnv(dir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, DATA_DIR: dir, NODE_ENV: 'test', PORT: '0', ...extra };
}

interface Served {
  child: ChildProcess;
  address: string;
  /** Every byte written to stdout and stderr so far. */
  output: () => string;
}

/** Starts `aps serve` and waits for its address line. */
async function serve(dir: string, env: Record<string, string>): Promise<Served> {
  const child = spawn(process.execPath, [CLI, 'serve'], { env: baseEnv(dir, env), cwd: dir });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString('latin1')));
  child.stderr.on('data', (d: Buffer) => (out += d.toString('latin1')));
  const address = await new Promise<string>((resolveAddress, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`no address in: ${out}`));
    }, 20_000);
    const look = () => {
      const m = /listening on (http:\/\/\S+) /.exec(out);
      if (m) {
        clearTimeout(timer);
        resolveAddress(m[1]!);
      }
    };
    child.stdout.on('data', look);
    child.on('exit', () => {
      reject(new Error(`exited: ${out}`));
    });
  });
  return { child, address, output: () => out };
}

async function stop(served: Served): Promise<void> {
  const exit = new Promise<void>((r) => {
    served.child.once('exit', () => {
      r();
    });
  });
  served.child.kill('SIGTERM');
  await exit;
}

/** Writes raw bytes to the server and reads until it closes or goes quiet. */
function raw(address: string, bytes: string): Promise<string> {
  const { hostname, port } = new URL(address);
  return new Promise((resolveReply) => {
    const socket = connect(Number(port), hostname);
    let reply = '';
    const done = () => {
      socket.destroy();
      resolveReply(reply);
    };
    const timer = setTimeout(done, 1500);
    socket.on('data', (d: Buffer) => {
      reply += d.toString('latin1');
      // One complete response is enough (keep-alive would hold the socket open).
      if (/\r\n\r\n/.test(reply)) {
        clearTimeout(timer);
        setTimeout(done, 50);
      }
    });
    socket.on('error', done);
    socket.on('close', done);
    socket.write(bytes);
  });
}

/** The requests, each carrying `key` or `jwt` somewhere; the statuses they got. */
async function probe(address: string, key: string, jwt: string): Promise<string[]> {
  const host = new URL(address).host;
  const statuses: string[] = [];
  const status = (reply: string) => statuses.push(reply.split('\r\n')[0] ?? '');
  // The reference console's event stream: its key in the WebSocket URL.
  status(
    await raw(
      address,
      `GET /api/v1/events?apiKey=${key} HTTP/1.1\r\nHost: ${host}\r\nConnection: Upgrade\r\n` +
        `Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n` +
        `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
    ),
  );
  const docs = `${address}/api/v1/knowledge/documents`;
  for (const url of [
    `${address}/api/v1/knowledge/events?apiKey=${key}`,
    `${docs}?api_key=${key}&limit=5`,
    `${docs}?ACCESS_TOKEN=${jwt}`,
    `${docs}?jwt=${jwt}&password=${key}&secret=${key}&Key=${key}&token=${key}`,
    `${docs}/${key}`,
    `${docs}/${jwt}/chunks`,
  ]) {
    const res = await fetch(url, { signal: AbortSignal.timeout(5000) }).catch(() => null);
    statuses.push(String(res?.status));
    await res?.body?.cancel();
  }
  const headerSets: Record<string, string>[] = [
    { authorization: `Bearer ${key}` },
    { authorization: `Bearer ${jwt}` },
    { 'x-api-key': key, cookie: `session=${key}` },
    { authorization: `Basic ${key}` },
    { authorization: `Bearer ${key}x` }, // a wrong key: 401, still never logged
  ];
  for (const headers of headerSets) {
    const res = await fetch(`${address}/api/v1/auth/api-keys`, { headers });
    statuses.push(String(res.status));
  }
  const ingest = await fetch(`${docs}/url`, {
    method: 'POST',
    headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: `http://user:${key}@127.0.0.1:9/x?token=${key}` }),
  });
  statuses.push(String(ingest.status));
  // Absolute-form request target with user:password, and a malformed request.
  status(
    await raw(
      address,
      `GET http://user:${key}@${host}/api/v1/knowledge/documents?apiKey=${key} HTTP/1.1\r\n` +
        `Host: ${host}\r\nConnection: close\r\n\r\n`,
    ),
  );
  status(await raw(address, `GET /?apiKey=${key} HTTP/1.1\r\nHost ${host}\r\n\r\n`));
  return statuses;
}

describe('no credential in any log line', () => {
  it('at every LOG_LEVEL and LOG_REQUESTS setting, in every position', async () => {
    const dir = tempDir();
    const created = await run(
      process.execPath,
      [CLI, 'keys', 'create', '--name', 'probe', '--level', 'L0', '--json'],
      { env: baseEnv(dir), cwd: dir },
    );
    const key = (JSON.parse(created.stdout) as { apiKey: string }).apiKey;
    const settings = LEVELS.flatMap((level) =>
      MODES.map((mode) => ({ LOG_LEVEL: level, LOG_REQUESTS: mode, LOG_FORMAT: 'json' })),
    );
    settings.push({ LOG_LEVEL: 'trace', LOG_REQUESTS: 'all', LOG_FORMAT: 'pretty' });
    let written = 0;
    for (const setting of settings) {
      const served = await serve(dir, setting);
      let statuses: string[];
      try {
        const token = await fetch(`${served.address}/api/v1/auth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ apiKey: key }),
        });
        expect(token.status).toBe(200);
        const jwt = ((await token.json()) as { token: string }).token;
        statuses = await probe(served.address, key, jwt);
      } finally {
        await stop(served);
      }
      const output = served.output();
      written += output.length;
      expect(statuses.length).toBe(15);
      expect(statuses).toContain('200'); // the credentials were real
      const where = `${JSON.stringify(setting)}: ${statuses.join(', ')}`;
      expect(output.includes(key), where).toBe(false);
      expect(output.includes(key.slice(4)), where).toBe(false);
      expect(/eyJ[A-Za-z0-9_-]+\.eyJ/.test(output), where).toBe(false);
      if (setting.LOG_LEVEL === 'trace') {
        // The lines were written, with the credentials replaced.
        expect(output).toContain('/api/v1/events?apiKey=[redacted]');
        expect(output).toContain('api_key=[redacted]&limit=5');
      }
    }
    expect(written).toBeGreaterThan(10_000);
  }, 240_000);

  it('a PostgreSQL URL’s password never reaches the output', async () => {
    const dir = tempDir();
    const password = 'pg-Secret-Password-9731';
    const child = spawn(process.execPath, [CLI, 'serve'], {
      env: baseEnv(dir, {
        LOG_LEVEL: 'trace',
        DATABASE_URL: `postgres://aps:${password}@127.0.0.1:9/aps?password=${password}`,
        DATABASE_CONNECT_TIMEOUT_MS: '500',
      }),
      cwd: dir,
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString('latin1')));
    child.stderr.on('data', (d: Buffer) => (out += d.toString('latin1')));
    const exited = new Promise<void>((r) => {
      child.once('exit', () => {
        r();
      });
    });
    // It cannot connect: it says so (and may keep trying); either way, the output is checked.
    const timer = setTimeout(() => child.kill('SIGTERM'), 6000);
    await exited;
    clearTimeout(timer);
    expect(out.length).toBeGreaterThan(0);
    expect(out).not.toContain(password);
  }, 20_000);
});

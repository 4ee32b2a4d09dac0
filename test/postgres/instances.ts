/**
 * Real server processes (`dist/cli.js serve`) for the multi-instance tests, and a throwaway
 * PostgreSQL cluster of their own (scripts/postgres/cluster.sh) for the tests that stop it.
 */
import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { tempDir } from '../helpers.js';

const CLI = resolve(import.meta.dirname, '../../dist/cli.js');
const CLUSTER = resolve(import.meta.dirname, '../../scripts/postgres/cluster.sh');

export interface Instance {
  name: string;
  child: ChildProcessWithoutNullStreams;
  url: string;
  output: () => string;
  /** The process is still running. */
  alive: () => boolean;
}

/** Starts `aps serve` on a free port with `env` (plus its own data directory). */
export async function startInstance(name: string, env: Record<string, string>): Promise<Instance> {
  const child = spawn(process.execPath, [CLI, 'serve'], {
    env: { PATH: process.env.PATH, ...env, DATA_DIR: tempDir(), PORT: '0' },
  });
  let out = '';
  let exited = false;
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  child.on('exit', () => (exited = true));
  const url = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`${name} did not start: ${out}`));
    }, 60_000);
    const check = () => {
      const m = /listening on (http:\/\/\S+) /.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        resolveUrl(m[1]!);
      }
    };
    child.stdout.on('data', check);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${String(code)}): ${out}`));
    });
  });
  return { name, child, url, output: () => out, alive: () => !exited };
}

/** A TCP port that was free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (typeof address === 'object' && address !== null) resolvePort(address.port);
        else reject(new Error('no port'));
      });
    });
  });
}

/** A PostgreSQL cluster in a directory of its own, which the test may stop and start again. */
export class TestCluster {
  readonly dir = tempDir();
  url = '';

  /** `cluster.sh <command> <dir>`; returns its stdout. */
  private async run(command: string, env: Record<string, string> = {}): Promise<string> {
    const { stdout } = await promisify(execFile)('bash', [CLUSTER, command, this.dir], {
      env: { ...process.env, ...env },
      timeout: 120_000,
    });
    return stdout.trim();
  }

  /** initdb and start, on `port` (cluster.sh's PG_PORT) when given. */
  async start(port?: number): Promise<string> {
    this.url = await this.run('start', port === undefined ? {} : { PG_PORT: String(port) });
    return this.url;
  }

  /** Stops the server, keeping its data: the outage begins. */
  async pause(): Promise<void> {
    await this.run('pause');
  }

  /** Starts it again on the same port. */
  async resume(): Promise<void> {
    await this.run('resume');
  }

  /** Stops it and removes the directory. */
  async stop(): Promise<void> {
    await this.run('stop');
  }
}

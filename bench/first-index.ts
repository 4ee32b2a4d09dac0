/**
 * `npx tsx bench/first-index.ts [--cli dist/cli.js] [--dirs 2]`: how long the first index takes
 * on fresh data directories of one machine. Each directory gets its own `aps serve` process (the
 * real binary, so an older build can be measured with the same script), one small document is
 * uploaded and indexed synchronously; the per-user cache folder (XDG_CACHE_HOME) is fresh at the
 * start and shared by the directories, as on a new machine.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    cli: { type: 'string', default: 'dist/cli.js' },
    dirs: { type: 'string', default: '2' },
  },
});
const cli = resolve(values.cli);
const root = mkdtempSync(join(tmpdir(), 'aps-first-index-'));
const cacheHome = join(root, 'xdg-cache');

async function firstIndex(dataDir: string): Promise<{ startMs: number; indexMs: number }> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [cli, 'serve'], {
    env: {
      PATH: process.env.PATH,
      HOME: root,
      XDG_CACHE_HOME: cacheHome,
      DATA_DIR: dataDir,
      PORT: '0',
      NODE_ENV: 'test',
      LOG_LEVEL: 'warn',
    },
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const { address, key } = await new Promise<{ address: string; key: string }>((ok, fail) => {
    const timer = setInterval(() => {
      const address = /listening on (http:\/\/\S+) /.exec(out)?.[1];
      const key = /^\s+(aps_\S+)$/m.exec(out)?.[1];
      if (address !== undefined && key !== undefined) {
        clearInterval(timer);
        ok({ address, key });
      }
    }, 20);
    child.on('exit', () => {
      clearInterval(timer);
      fail(new Error(`server exited: ${out}`));
    });
  });
  const startMs = performance.now() - t0;
  const headers = { authorization: `Bearer ${key}` };
  const form = new FormData();
  form.append('file', new Blob(['# Walruses\n\nWalruses rest on floating ice.\n']), 'w.md');
  const api = `${address}/api/v1/knowledge/documents`;
  const uploaded = await fetch(`${api}/upload`, { method: 'POST', headers, body: form });
  const { id } = (await uploaded.json()) as { id: string };
  const t1 = performance.now();
  const indexed = await fetch(`${api}/${id}/index`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: '{}',
  });
  if (indexed.status !== 201) throw new Error(`index: ${indexed.status} ${await indexed.text()}`);
  const indexMs = performance.now() - t1;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
  return { startMs, indexMs };
}

try {
  console.log(`cli ${cli}`);
  for (let i = 1; i <= Number(values.dirs); i++) {
    const { startMs, indexMs } = await firstIndex(join(root, `data-${i}`));
    console.log(
      `data directory ${i}: start ${(startMs / 1000).toFixed(2)} s, first index ${(indexMs / 1000).toFixed(2)} s`,
    );
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}

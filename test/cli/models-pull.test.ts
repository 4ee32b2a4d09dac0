/**
 * `aps models pull` and `aps models list`: the built CLI (dist/cli.js) as a child process against
 * a real HTTP hub on 127.0.0.1 (models-hub-server.ts) serving a small, loadable model.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers.js';
import { buildTinyOnnxModel, writeTinyModel } from '../knowledge/embeddings/fixtures/tiny-model.js';
import { startHubServer, type HubServer } from './models-hub-server.js';

const CLI = resolve(import.meta.dirname, '../../dist/cli.js');
const run = promisify(execFile);
const REPO = 'test-org/tiny-model';
const TOKEN = 'hf_TestToken0123456789';

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

let hub: HubServer;
let source: string;

/** `aps models …` in a fresh working directory (no .env), against the local hub. */
async function aps(args: string[], env: Record<string, string> = {}): Promise<Outcome> {
  const cwd = tempDir();
  const fullEnv = {
    PATH: process.env.PATH,
    NODE_ENV: 'test',
    DATA_DIR: cwd,
    HF_ENDPOINT: hub.url,
    ...env,
  };
  return run(process.execPath, [CLI, 'models', ...args], { env: fullEnv, cwd }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (e: unknown) => e as Outcome,
  );
}

const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

/** The repository's files, relative paths sorted. */
function filesOf(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
    .sort();
}

beforeAll(async () => {
  const root = tempDir();
  source = await writeTinyModel(root, 'tiny-model');
  // A second, different weight file (the int8 slot), big enough to be cut midway.
  await writeFile(join(source, 'onnx/model_quantized.onnx'), buildTinyOnnxModel({ busyLayers: 1 }));
  await mkdir(join(source, '1_Pooling'));
  await writeFile(join(source, '1_Pooling/config.json'), '{"pooling_mode_mean_tokens": true}\n');
  await writeFile(join(source, 'README.md'), '# not part of the layout\n');
  const catalogue = await writeTinyModel(root, 'catalogue-copy');
  const noOnnx = join(root, 'no-onnx');
  await mkdir(noOnnx);
  for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json'])
    await writeFile(join(noOnnx, f), readFileSync(join(source, f)));
  hub = await startHubServer([
    { id: REPO, dir: source, extraNames: ['../escape.json', 'onnx/../../up.onnx'] },
    { id: 'Xenova/all-MiniLM-L6-v2', dir: catalogue },
    { id: 'test-org/no-onnx', dir: noOnnx },
  ]);
}, 60_000);

afterAll(async () => {
  await hub.close();
});

beforeEach(() => {
  hub.requests.length = 0;
  hub.faults = {};
  hub.token = null;
});

describe('aps models pull', () => {
  it('downloads the layout files, checked, manifest last; then up to date; list shows it', async () => {
    const dir = tempDir();
    const started = performance.now();
    const pulled = await aps(['pull', REPO, '--dir', dir]);
    const seconds = (performance.now() - started) / 1000;
    expect(pulled.stderr).not.toMatch(/error/i);
    expect(pulled.code).toBe(0);
    expect(pulled.stdout).toMatch(
      /^pulled test-org\/tiny-model \(test-org\/tiny-model@[0-9a-f]{12}\)/,
    );
    const target = join(dir, 'test-org', 'tiny-model');
    const want = [
      '1_Pooling/config.json',
      'config.json',
      'onnx/model.onnx',
      'onnx/model_quantized.onnx',
      'tokenizer.json',
      'tokenizer_config.json',
    ];
    expect(filesOf(target)).toEqual([...want, 'aps-model.json'].sort());
    for (const f of want) expect(sha256(join(target, f))).toBe(sha256(join(source, f)));
    const manifest = JSON.parse(readFileSync(join(target, 'aps-model.json'), 'utf8')) as {
      name: string;
      kind: string;
      source: Record<string, string>;
      files: { path: string; bytes: number; sha256: string }[];
    };
    expect(manifest).toMatchObject({
      name: REPO,
      kind: 'embedding',
      source: { type: 'hub', repo: REPO, url: hub.url },
    });
    expect(manifest.source.revision).toMatch(/^[0-9a-f]{40}$/);
    expect(manifest.files.map((f) => f.path).sort()).toEqual(want);
    for (const f of manifest.files) expect(f.sha256).toBe(sha256(join(source, f.path)));
    // The weights came from the CDN origin (redirected), at the resolved commit, not `main`.
    const resolves = hub.requests.filter((r) => r.path.includes('/resolve/'));
    expect(resolves.every((r) => r.path.includes(`/resolve/${manifest.source.revision}/`))).toBe(
      true,
    );
    expect(hub.requests.filter((r) => r.origin === 'cdn')).toHaveLength(2);
    console.log(`pull of the tiny model (${want.length} files): ${seconds.toFixed(2)} s`);

    const again = await aps(['pull', REPO, '--dir', dir]);
    expect(again.stdout).toMatch(/^up to date: test-org\/tiny-model/);
    expect(hub.requests.filter((r) => r.path.includes('/resolve/'))).toHaveLength(resolves.length);

    const listed = await aps(['list', '--dir', dir, '--json']);
    const json = JSON.parse(listed.stdout) as { installed: Record<string, unknown>[] };
    expect(json.installed).toEqual([
      expect.objectContaining({
        name: REPO,
        kind: 'embedding',
        dimensions: 32,
        fp32: true,
        int8: true,
        source: expect.objectContaining({ type: 'hub', repo: REPO }),
      }),
    ]);
    const table = (await aps(['list', '--dir', dir])).stdout;
    expect(table).toMatch(/^NAME\s+KIND\s+DIMS\s+FP32\s+INT8\s+SIZE\s+SOURCE\n/);
    expect(table).toMatch(
      /test-org\/tiny-model\s+embedding\s+32\s+yes\s+yes\s+\d+\.\d kB\s+hub test-org\/tiny-model@/,
    );
  });

  it('a catalogue name lands under its short name; list names a configured model that is missing', async () => {
    const dir = tempDir();
    const pulled = await aps(['pull', 'all-MiniLM-L6-v2', '--dir', dir, '--json']);
    expect(pulled.code).toBe(0);
    expect(JSON.parse(pulled.stdout)).toMatchObject({
      name: 'all-MiniLM-L6-v2',
      repo: 'Xenova/all-MiniLM-L6-v2',
      kind: 'embedding',
      upToDate: false,
      downloaded: 4,
    });
    expect(existsSync(join(dir, 'all-MiniLM-L6-v2', 'aps-model.json'))).toBe(true);
    const listed = await aps(['list', '--dir', dir], {
      EMBEDDING_PROVIDER: 'transformers',
      EMBEDDING_MODEL: 'bge-small-en-v1.5',
      RERANK_PROVIDER: 'transformers',
    });
    expect(listed.stdout).toMatch(/^all-MiniLM-L6-v2\s+embedding\s+384\s+yes\s+-\s/m);
    expect(listed.stdout).toContain(
      'missing: bge-small-en-v1.5 (EMBEDDING_MODEL): install with aps models pull bge-small-en-v1.5',
    );
    expect(listed.stdout).toContain('missing: ms-marco-MiniLM-L-12-v2 (RERANK_MODEL)');
    // The same model under its hub name counts as installed.
    const viaAlias = await aps(['list', '--dir', dir], {
      EMBEDDING_PROVIDER: 'transformers',
      EMBEDDING_MODEL: 'sentence-transformers/all-MiniLM-L6-v2',
    });
    expect(viaAlias.stdout).not.toContain('missing:');
  });

  it('resumes a download cut midway, in the same run and from an earlier run', async () => {
    const dir = tempDir();
    hub.faults.dropAfter = new Map([['onnx/model_quantized.onnx', 100_000]]);
    const pulled = await aps(['pull', REPO, '--dir', dir]);
    expect(pulled.code).toBe(0);
    const target = join(dir, 'test-org', 'tiny-model');
    expect(sha256(join(target, 'onnx/model_quantized.onnx'))).toBe(
      sha256(join(source, 'onnx/model_quantized.onnx')),
    );
    const cdn = hub.requests.filter((r) => r.origin === 'cdn').map((r) => r.range);
    // One whole file, then the cut one and its resumption where the file on disk ends (at most
    // where the server cut: bytes in flight when the connection dropped may be lost).
    expect(cdn).toHaveLength(3);
    expect(cdn.slice(0, 2)).toEqual([null, null]);
    const from = Number(/^bytes=(\d+)-$/.exec(cdn[2] ?? '')?.[1]);
    expect(from).toBeGreaterThan(0);
    expect(from).toBeLessThanOrEqual(100_000);
    expect(pulled.stderr).toContain(
      `resuming onnx/model_quantized.onnx at ${(from / 1000).toFixed(1)} kB (attempt 2)`,
    );

    // A `.part` left by an interrupted run: the next run asks only for the rest.
    const fresh = tempDir();
    const part = join(fresh, 'test-org', 'tiny-model', 'onnx', 'model_quantized.onnx.part');
    await mkdir(join(part, '..'), { recursive: true });
    await writeFile(
      part,
      readFileSync(join(source, 'onnx/model_quantized.onnx')).subarray(0, 4096),
    );
    hub.requests.length = 0;
    const resumed = await aps(['pull', REPO, '--dir', fresh]);
    expect(resumed.code).toBe(0);
    expect(hub.requests.filter((r) => r.origin === 'cdn').map((r) => r.range)).toContain(
      'bytes=4096-',
    );
    expect(existsSync(part)).toBe(false);
  });

  it.skipIf(!existsSync('/usr/bin/script'))(
    'on a terminal: a byte bar, notes above it, erased before the result',
    async () => {
      const dir = tempDir();
      hub.faults.dropAfter = new Map([['onnx/model_quantized.onnx', 100_000]]);
      const command = `${process.execPath} ${CLI} models pull ${REPO} --dir ${dir}`;
      const { stdout: out } = await run('script', ['-qec', command, '/dev/null'], {
        env: { PATH: process.env.PATH, NODE_ENV: 'test', DATA_DIR: dir, HF_ENDPOINT: hub.url },
        cwd: dir,
      });
      const ERASE = '\r\u001b[2K';
      const shownLines = out.split(ERASE);
      expect(out).toMatch(
        /\[[#-]{16}\] \d+\.\d\/541\.2 kB +\d+% +\d+(\.\d)? k?B\/s +ETA [-\d]+:[-\d]+ +onnx\/model_qu/,
      );
      // The note about the resumed file stands on its own line, the bar redrawn after it.
      expect(shownLines).toContainEqual(
        expect.stringMatching(
          /^resuming onnx\/model_quantized\.onnx at \d+\.\d kB \(attempt 2\)\r\n\[/,
        ),
      );
      const result = out.lastIndexOf('pulled test-org/tiny-model');
      expect(out.lastIndexOf(ERASE)).toBe(result - ERASE.length);
    },
  );

  it('a file that does not match its checksum fails, leaving no manifest and no file', async () => {
    const dir = tempDir();
    hub.faults.corrupt = new Set(['onnx/model.onnx']);
    const failed = await aps(['pull', REPO, '--dir', dir]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(
      /^aps models pull: onnx\/model\.onnx: .*checksum mismatch \(sha256 [0-9a-f]{64}, expected [0-9a-f]{64}\)/m,
    );
    const target = join(dir, 'test-org', 'tiny-model');
    expect(existsSync(join(target, 'aps-model.json'))).toBe(false);
    expect(existsSync(join(target, 'onnx/model.onnx'))).toBe(false);
    expect(existsSync(join(target, 'onnx/model.onnx.part'))).toBe(false);
    // Mended, the next run completes (the files already there are kept).
    hub.faults = {};
    const again = await aps(['pull', REPO, '--dir', dir]);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain('kept config.json');
  });

  it('refuses names that would leave the models folder', async () => {
    const dir = tempDir();
    // The CLI's part; every other shape of name is covered by models-units.test.ts.
    const cases = [
      [['pull', REPO, '--include', 'onnx/../../up.onnx'], 'leads out of the model directory'],
      [['pull', REPO, '--include', '/etc/passwd'], 'is an absolute path'],
      [['pull', '../tiny-model'], 'is not a hub repository id'],
    ] as const;
    const outs = await Promise.all(
      cases.map(([args]) => aps([...args, '--dir', join(dir, 'models')])),
    );
    outs.forEach((out, i) => {
      const [args, message] = cases[i]!;
      expect(out.code, args.join(' ')).toBe(1);
      expect(out.stderr).toContain(message);
    });
    expect(readdirSync(dir)).toEqual([]);
    // Hostile names in the hub's listing are never chosen.
    const ok = await aps(['pull', REPO, '--dir', join(dir, 'models')]);
    expect(ok.code).toBe(0);
    expect(readdirSync(dir)).toEqual(['models']);
    expect(hub.requests.some((r) => r.path.includes('escape') || r.path.includes('up.onnx'))).toBe(
      false,
    );
  });

  it('sends HF_TOKEN to the hub only, never prints it; says what is wrong without one', async () => {
    hub.token = TOKEN;
    const dir = tempDir();
    const refused = await aps(['pull', REPO, '--dir', dir]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('the hub refused access to test-org/tiny-model (HTTP 401)');
    expect(refused.stderr).toContain('needs HF_TOKEN');
    const pulled = await aps(['pull', REPO, '--dir', dir], { HF_TOKEN: TOKEN });
    expect(pulled.code).toBe(0);
    expect(`${pulled.stdout}${pulled.stderr}`).not.toContain(TOKEN);
    const fromHub = hub.requests.filter((r) => r.origin === 'hub' && r.authorization !== null);
    expect(fromHub.length).toBeGreaterThan(0);
    expect(fromHub.every((r) => r.authorization === `Bearer ${TOKEN}`)).toBe(true);
    // The CDN is another origin: the redirect drops the Authorization header.
    const cdn = hub.requests.filter((r) => r.origin === 'cdn');
    expect(cdn.length).toBe(2);
    expect(cdn.every((r) => r.authorization === null)).toBe(true);
    const manifest = readFileSync(join(dir, 'test-org', 'tiny-model', 'aps-model.json'), 'utf8');
    expect(manifest).not.toContain(TOKEN);
  });

  it('a repository without ONNX weights, or unknown, fails with the reason', async () => {
    const dir = tempDir();
    const [noOnnx, unknown, badRev, down] = await Promise.all([
      aps(['pull', 'test-org/no-onnx', '--dir', dir]),
      aps(['pull', 'test-org/nothing', '--dir', dir]),
      aps(['pull', REPO, '--revision', 'v9', '--dir', dir]),
      aps(['pull', REPO, '--dir', dir], { HF_ENDPOINT: 'http://127.0.0.1:9' }),
    ]);
    expect(noOnnx.code).toBe(1);
    expect(noOnnx.stderr).toContain('carries no ONNX weights');
    expect(unknown.stderr).toContain(
      `no repository test-org/nothing at revision main on ${hub.url}`,
    );
    expect(badRev.stderr).toContain('at revision v9');
    expect(down.stderr).toMatch(
      /^aps models pull: cannot reach http:\/\/127\.0\.0\.1:9\/api\/models/m,
    );
    expect(readdirSync(dir)).toEqual([]);
  });
});

/**
 * The pure parts of the model tools (path and repo checks, file choice, manifests, the byte bar)
 * and `download()` in process against the local hub (models-hub-server.ts).
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { download } from '../../src/cli/models-download.js';
import {
  checkRepoId,
  chooseFiles,
  expectedOf,
  normaliseEndpoint,
  shownEndpoint,
  type HubSibling,
} from '../../src/cli/models-hub.js';
import { installHint, listInstalled, missingModels } from '../../src/cli/models-list.js';
import { byteBarLine, bytePair } from '../../src/cli/models-progress.js';
import {
  checkRelativePath,
  describeFile,
  formatBytes,
  pathInside,
  readManifest,
  verifyManifest,
  writeManifest,
  type ModelManifest,
} from '../../src/knowledge/embeddings/model-files.js';
import { tempDir } from '../helpers.js';
import { startHubServer, type HubServer } from './models-hub-server.js';

describe('file names and repository ids', () => {
  it('accepts the layout names and refuses every way out', () => {
    for (const ok of ['config.json', 'onnx/model.onnx', '1_Pooling/config.json', 'a..b/c'])
      expect(checkRelativePath(ok)).toBe(ok);
    for (const bad of [
      '',
      '..',
      '../x',
      'onnx/../../x',
      '/etc/passwd',
      'C:/x',
      'a\\b',
      'a//b',
      './a',
      'a/.',
      'x\0y',
    ])
      expect(() => checkRelativePath(bad), bad).toThrow(/refusing the file name/);
  });

  it('whatever the name, an accepted one stays inside the directory (property)', () => {
    const root = '/models/m';
    const segment = fc.constantFrom('..', '.', '', 'a', 'onnx', 'b.json', '\\', 'C:', '%2e%2e');
    fc.assert(
      fc.property(fc.array(segment, { minLength: 1, maxLength: 5 }), fc.boolean(), (parts, abs) => {
        const name = `${abs ? '/' : ''}${parts.join('/')}`;
        let full: string;
        try {
          full = pathInside(root, name);
        } catch {
          return true;
        }
        return full.startsWith(`${root}/`);
      }),
    );
  });

  it('an endpoint is an http(s) URL without credentials, shown without its query', () => {
    expect(normaliseEndpoint('https://hf-mirror.example/')).toBe('https://hf-mirror.example');
    expect(() => normaliseEndpoint('ftp://x')).toThrow(/http\(s\) URL/);
    expect(() => normaliseEndpoint('https://u:p@x')).toThrow(/set HF_TOKEN/);
    expect(shownEndpoint('https://user:secret@mirror.example/hf/?sig=x')).toBe(
      'https://mirror.example/hf',
    );
  });

  it('repository ids are owner/name', () => {
    expect(checkRepoId('Xenova/bge-small-en-v1.5')).toBe('Xenova/bge-small-en-v1.5');
    for (const bad of [
      'bge',
      '../x',
      'a/..',
      'a/b/c',
      '/a/b',
      'a/b/',
      'a\\b/c',
      'a/.hidden',
      'a/b..c',
    ])
      expect(() => checkRepoId(bad), bad).toThrow(/not a hub repository id/);
  });
});

describe('which files a pull takes', () => {
  const sib = (rfilename: string, extra: Partial<HubSibling> = {}): HubSibling => ({
    rfilename,
    size: 10,
    ...extra,
  });
  const base = ['config.json', 'tokenizer.json', 'tokenizer_config.json'].map((f) => sib(f));

  it('the layout files present, extras only on request', () => {
    const listing = [
      ...base,
      sib('onnx/model.onnx'),
      sib('onnx/model_fp16.onnx'),
      sib('README.md'),
      sib('special_tokens_map.json'),
    ];
    expect(chooseFiles(listing).map((s) => s.rfilename)).toEqual([
      'config.json',
      'tokenizer.json',
      'tokenizer_config.json',
      'special_tokens_map.json',
      'onnx/model.onnx',
    ]);
    expect(chooseFiles(listing, ['onnx/model_fp16.onnx']).map((s) => s.rfilename)).toContain(
      'onnx/model_fp16.onnx',
    );
    expect(() => chooseFiles(listing, ['onnx/nope.onnx'])).toThrow(/no file onnx\/nope.onnx/);
  });

  it('needs the tokenizer and config, and some ONNX weights', () => {
    expect(() => chooseFiles([sib('onnx/model.onnx')])).toThrow(/no config.json, tokenizer.json/);
    expect(() => chooseFiles(base)).toThrow(/carries no ONNX weights/);
    expect(chooseFiles([...base, sib('onnx/model_quantized.onnx')])).toHaveLength(4);
  });

  it('checks LFS files by SHA-256, others by git blob id, both by size', () => {
    const lfs = { sha256: 'a'.repeat(64), size: 99 };
    expect(expectedOf(sib('onnx/model.onnx', { lfs, blobId: 'b' }))).toEqual({
      bytes: 99,
      sha256: 'a'.repeat(64),
    });
    expect(expectedOf(sib('config.json', { blobId: 'c'.repeat(40) }))).toEqual({
      bytes: 10,
      gitBlob: 'c'.repeat(40),
    });
  });
});

describe('manifests', () => {
  it('verify every file by size and SHA-256; a malformed manifest is an error', async () => {
    const dir = tempDir();
    await mkdir(join(dir, 'onnx'));
    await writeFile(join(dir, 'config.json'), '{}');
    await writeFile(join(dir, 'onnx/model.onnx'), Buffer.alloc(1000, 7));
    const manifest: ModelManifest = {
      name: 'm',
      kind: 'embedding',
      source: { type: 'hub', repo: 'o/m', revision: 'abc' },
      files: [await describeFile(dir, 'config.json'), await describeFile(dir, 'onnx/model.onnx')],
      installedAt: new Date().toISOString(),
    };
    expect(manifest.files[1]?.sha256).toBe(
      createHash('sha256').update(Buffer.alloc(1000, 7)).digest('hex'),
    );
    await writeManifest(dir, manifest);
    expect(await readManifest(dir)).toEqual(manifest);
    expect(await verifyManifest(dir, manifest)).toEqual([]);
    const changed = Buffer.alloc(1000, 7);
    changed[500] = 8;
    await writeFile(join(dir, 'onnx/model.onnx'), changed);
    expect(await verifyManifest(dir, manifest, { hash: false })).toEqual([]);
    expect(await verifyManifest(dir, manifest)).toEqual([
      'onnx/model.onnx does not match its SHA-256 in the manifest',
    ]);
    await writeFile(join(dir, 'config.json'), '{ }');
    expect(await verifyManifest(dir, manifest, { hash: false })).toContain(
      'config.json has 3 bytes, the manifest says 2',
    );
    await writeFile(join(dir, 'aps-model.json'), '{"name": "m"}');
    await expect(readManifest(dir)).rejects.toThrow(/is not a model manifest/);
    expect(await readManifest(tempDir())).toBeNull();
  });

  it('list: one and two levels down; missing configured models with how to get them', async () => {
    const root = tempDir();
    for (const d of ['bge-small-en-v1.5', 'owner/model', 'not-a-model']) {
      await mkdir(join(root, d, 'onnx'), { recursive: true });
      if (d !== 'not-a-model') await writeFile(join(root, d, 'onnx/model.onnx'), 'x');
      await writeFile(join(root, d, 'config.json'), '{"hidden_size": 768}');
    }
    const installed = await listInstalled(root);
    expect(installed.map((m) => [m.name, m.dimensions, m.fp32, m.int8, m.source])).toEqual([
      ['bge-small-en-v1.5', 384, true, false, null],
      ['owner/model', 768, true, false, null],
    ]);
    const missing = missingModels(installed, [
      { name: 'BAAI/bge-small-en-v1.5', setting: 'EMBEDDING_MODEL' },
      { name: 'ms-marco-MiniLM-L-12-v2', setting: 'RERANK_MODEL' },
    ]);
    expect(missing.map((m) => m.name)).toEqual(['ms-marco-MiniLM-L-12-v2']);
    expect(installHint('x/y')).toBe('aps models pull x/y');
    expect(installHint('my-model')).toMatch(/in a folder named my-model/);
  });
});

describe('the byte bar', () => {
  it('sizes, percentage, rate and ETA', () => {
    expect(formatBytes(999)).toBe('999 B');
    expect(formatBytes(133_093_490)).toBe('133.1 MB');
    expect(byteBarLine(50e6, 100e6, 5000, 50e6, 'onnx/model.onnx', 10)).toBe(
      '[#####-----] 50.0/100.0 MB  50%  10.0 MB/s  ETA 0:05  onnx/model.onnx',
    );
    expect(bytePair(219, 541_200)).toBe('0.2/541.2 kB');
    expect(bytePair(12, 900)).toBe('12/900 B');
    // A real model's line fits an 80-column terminal.
    expect(byteBarLine(45.2e6, 127e6, 4000, 45.2e6, 'onnx/model.onnx').length).toBeLessThan(80);
    // Resumed bytes do not count in the rate.
    expect(byteBarLine(90e6, 100e6, 1000, 0, 'x', 10)).toContain('ETA --:--');
  });
});

describe('download()', () => {
  let hub: HubServer;
  let content: Buffer;
  let fileUrl: string;
  let sha: string;

  beforeAll(async () => {
    const repo = tempDir();
    content = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 31) % 251));
    await mkdir(join(repo, 'onnx'));
    await writeFile(join(repo, 'onnx/model.onnx'), content);
    hub = await startHubServer([{ id: 'o/m', dir: repo }]);
    fileUrl = `${hub.url}/o/m/resolve/main/onnx/model.onnx`;
    sha = createHash('sha256').update(content).digest('hex');
  });

  afterAll(async () => {
    await hub.close();
  });

  it('retries a dropped connection with a Range request, then checks the file', async () => {
    hub.faults = { dropAfter: new Map([['onnx/model.onnx', 123_456]]) };
    const dest = join(tempDir(), 'model.onnx');
    const seen: number[] = [];
    const got = await download({
      url: fileUrl,
      dest,
      expected: { bytes: content.length, sha256: sha },
      onRequest: (from) => seen.push(from),
      backoffMs: () => 0,
    });
    // The second request starts where the file on disk ends: at most where the server cut (the
    // bytes in flight when the connection dropped may be lost), never at 0.
    expect(seen).toHaveLength(2);
    expect(seen[1]).toBeGreaterThan(0);
    expect(seen[1]).toBeLessThanOrEqual(123_456);
    const cdn = hub.requests.filter((r) => r.origin === 'cdn').map((r) => r.range);
    expect(cdn.slice(-2)).toEqual([null, `bytes=${seen[1]}-`]);
    expect(got).toMatchObject({ bytes: content.length, sha256: sha, resumedFrom: 0, requests: 2 });
    expect(readFileSync(dest).equals(content)).toBe(true);
    expect(existsSync(`${dest}.part`)).toBe(false);
  });

  it('a `.part` that is whole already is only checked; one too long starts over', async () => {
    const dir = tempDir();
    await writeFile(join(dir, 'a.part'), content);
    const whole = await download({
      url: fileUrl,
      dest: join(dir, 'a'),
      expected: { bytes: content.length, sha256: sha },
    });
    expect(whole.requests).toBe(0);
    await writeFile(join(dir, 'b.part'), Buffer.concat([content, Buffer.from('more')]));
    const longer = await download({
      url: fileUrl,
      dest: join(dir, 'b'),
      expected: { bytes: content.length },
    });
    expect(longer).toMatchObject({ resumedFrom: 0, requests: 1, sha256: sha });
  });

  it('gives up on 404 at once, and on a wrong digest removes the part', async () => {
    const dir = tempDir();
    await expect(
      download({
        url: `${hub.url}/o/m/resolve/main/nope`,
        dest: join(dir, 'x'),
        backoffMs: () => 0,
      }),
    ).rejects.toMatchObject({ status: 404 });
    await expect(
      download({ url: fileUrl, dest: join(dir, 'y'), expected: { sha256: '0'.repeat(64) } }),
    ).rejects.toThrow(/checksum mismatch \(sha256 [0-9a-f]{64}, expected 0{64}\)/);
    expect(existsSync(join(dir, 'y.part'))).toBe(false);
    expect(existsSync(join(dir, 'y'))).toBe(false);
  });
});

/**
 * A Hugging Face compatible hub on 127.0.0.1 for `aps models pull` tests: the revision API with
 * real SHA-256s and git blob ids, `resolve` URLs with Range support, LFS files redirected to a
 * second origin (as huggingface.co sends them to its CDN), an optional bearer token, and faults
 * on demand (a connection dropped after N bytes, a corrupted byte). Files are served from disk,
 * so a real model of 100 MB costs no memory.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, relative, sep } from 'node:path';

export interface HubRepoSpec {
  id: string;
  /** Every file under this directory is a file of the repository. */
  dir: string;
  /** More listed names (e.g. hostile ones) that are served as empty files. */
  extraNames?: string[];
}

interface HubFile {
  path: string;
  disk: string | null;
  size: number;
  sha256: string;
  blobId: string;
  lfs: boolean;
}

export interface RecordedRequest {
  origin: 'hub' | 'cdn';
  path: string;
  range: string | null;
  authorization: string | null;
}

export interface HubFaults {
  /** The next request for this file (repo-relative path) is cut after this many bytes (once). */
  dropAfter?: Map<string, number>;
  /** These files are served with one byte changed (same size). */
  corrupt?: Set<string>;
}

export interface HubServer {
  url: string;
  requests: RecordedRequest[];
  faults: HubFaults;
  /** Answer 401 to requests without `Authorization: Bearer <token>` (CDN excepted). */
  token: string | null;
  close(): Promise<void>;
}

/** Files stored in LFS on the hub: the weights (the rest are listed by git blob id only). */
const isLfs = (path: string) => path.endsWith('.onnx') || path.endsWith('.bin');

async function hashFile(path: string, size: number): Promise<{ sha256: string; blobId: string }> {
  const sha256 = createHash('sha256');
  const blob = createHash('sha1').update(`blob ${size}\0`);
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
    sha256.update(chunk as Buffer);
    blob.update(chunk as Buffer);
  }
  return { sha256: sha256.digest('hex'), blobId: blob.digest('hex') };
}

async function indexRepo(spec: HubRepoSpec): Promise<HubFile[]> {
  const files: HubFile[] = [];
  for (const entry of await readdir(spec.dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const disk = join(entry.parentPath, entry.name);
    const path = relative(spec.dir, disk).split(sep).join('/');
    const { size } = await stat(disk);
    files.push({ path, disk, size, ...(await hashFile(disk, size)), lfs: isLfs(path) });
  }
  const empty = createHash('sha256').digest('hex');
  const emptyBlob = createHash('sha1').update('blob 0\0').digest('hex');
  for (const path of spec.extraNames ?? [])
    files.push({ path, disk: null, size: 0, sha256: empty, blobId: emptyBlob, lfs: false });
  return files;
}

const listen = (server: Server) =>
  new Promise<string>((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    });
  });

const closeServer = (server: Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => {
      resolve();
    });
  });

export async function startHubServer(specs: HubRepoSpec[]): Promise<HubServer> {
  const repos = new Map<string, { sha: string; files: HubFile[] }>();
  for (const spec of specs) {
    const files = await indexRepo(spec);
    const sha = createHash('sha1')
      .update(files.map((f) => f.sha256).join())
      .digest('hex');
    repos.set(spec.id, { sha, files });
  }
  const byLfsSha = new Map(
    [...repos.values()].flatMap((r) => r.files.filter((f) => f.lfs).map((f) => [f.sha256, f])),
  );
  const state: HubServer = {
    url: '',
    requests: [],
    faults: {},
    token: null,
    close: async () => {
      await Promise.all([closeServer(hub), closeServer(cdn)]);
    },
  };
  const record = (origin: 'hub' | 'cdn', req: IncomingMessage) => {
    state.requests.push({
      origin,
      path: decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname),
      range: req.headers.range ?? null,
      authorization: req.headers.authorization ?? null,
    });
  };

  /** The file body, with Range, and the faults asked for. */
  function send(req: IncomingMessage, res: ServerResponse, file: HubFile): void {
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    const start = range === null ? 0 : Number(range[1]);
    if (start > 0 && start >= file.size) {
      res.writeHead(416, { 'Content-Range': `bytes */${file.size}` }).end();
      return;
    }
    const headers: Record<string, string | number> = {
      'Content-Type': 'application/octet-stream',
      'Content-Length': file.size - start,
      'Accept-Ranges': 'bytes',
      ETag: `"${file.lfs ? file.sha256 : file.blobId}"`,
    };
    if (start > 0) headers['Content-Range'] = `bytes ${start}-${file.size - 1}/${file.size}`;
    res.writeHead(start > 0 ? 206 : 200, headers);
    if (file.disk === null) {
      res.end();
      return;
    }
    // A cut happens once: the entry is used up, so the retry gets the rest.
    const cut = state.faults.dropAfter?.get(file.path) ?? null;
    state.faults.dropAfter?.delete(file.path);
    const corrupt = state.faults.corrupt?.has(file.path) === true;
    let sent = start;
    const stream = createReadStream(file.disk, { start });
    stream.on('data', (chunk: Buffer | string) => {
      let buf = Buffer.from(chunk);
      if (corrupt && sent === start && start === 0) {
        buf = Buffer.from(buf);
        buf[0] = (buf[0] ?? 0) ^ 0xff;
      }
      if (cut !== null && sent + buf.length >= cut) {
        res.write(buf.subarray(0, cut - sent));
        stream.destroy();
        // Headers promised more: the client gets exactly `cut` bytes, then the connection closes
        // (end, not destroy: destroy would drop bytes still in the socket's buffer).
        res.socket?.end();
        return;
      }
      sent += buf.length;
      res.write(buf);
    });
    stream.on('end', () => res.end());
  }

  const hub = createServer((req, res) => {
    record('hub', req);
    const url = new URL(req.url ?? '/', 'http://x');
    const auth = req.headers.authorization;
    if (state.token !== null && auth !== `Bearer ${state.token}`) {
      res.writeHead(401, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ error: 'Invalid credentials in Authorization header' }));
      return;
    }
    const api = /^\/api\/models\/([^/]+\/[^/]+)\/revision\/([^/]+)$/.exec(url.pathname);
    if (api !== null) {
      const repo = repos.get(api[1] ?? '');
      const rev = decodeURIComponent(api[2] ?? '');
      if (repo === undefined || (rev !== 'main' && rev !== repo.sha)) {
        res.writeHead(404, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ error: 'Repository not found' }));
        return;
      }
      const siblings = repo.files.map((f) => ({
        rfilename: f.path,
        size: f.size,
        blobId: f.blobId,
        ...(f.lfs ? { lfs: { sha256: f.sha256, size: f.size, pointerSize: 134 } } : {}),
      }));
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ id: api[1], sha: repo.sha, siblings }));
      return;
    }
    const resolve = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(url.pathname);
    const repo = repos.get(resolve?.[1] ?? '');
    const rev = resolve?.[2];
    const path = decodeURIComponent(resolve?.[3] ?? '');
    const file = repo?.files.find((f) => f.path === path);
    if (repo === undefined || file === undefined || (rev !== 'main' && rev !== repo.sha)) {
      res.writeHead(404).end('Entry not found');
      return;
    }
    if (file.lfs) {
      res.writeHead(302, { Location: `${cdnUrl}/lfs/${file.sha256}?X-Signature=secret` }).end();
      return;
    }
    send(req, res, file);
  });

  const cdn = createServer((req, res) => {
    record('cdn', req);
    const sha = /^\/lfs\/([0-9a-f]{64})$/.exec(new URL(req.url ?? '/', 'http://x').pathname)?.[1];
    const file = byLfsSha.get(sha ?? '');
    if (file === undefined) res.writeHead(404).end();
    else send(req, res, file);
  });

  const [hubUrl, cdnUrl] = await Promise.all([listen(hub), listen(cdn)]);
  state.url = hubUrl;
  return state;
}

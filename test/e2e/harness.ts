/**
 * What the console's end-to-end tests run on: the built server (`node dist/cli.js serve`, SQLite in
 * a fresh data directory, a known bootstrap key) and Debian's Chromium driven by playwright-core.
 * Every page records console errors and uncaught exceptions, and the tests fail on any.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
/** The static model's cache the other tests share (test/helpers.ts: not imported, it loads the server). */
const TEST_EMBEDDING_CACHE =
  process.env.APS_TEST_EMBEDDING_CACHE ?? join(ROOT, 'node_modules/.cache/aps-test-embeddings');

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'aps-e2e-'));
}
export const ARTIFACTS = join(ROOT, 'test-artifacts', 'console');
export const KEY = 'aps_e2e_console_key_0123456789abcdefghij';
export const WIDTHS = [1280, 390] as const;

export interface RunningServer {
  url: string;
  dataDir: string;
  stop(): Promise<void>;
}

/** Starts the built server on a free port; resolves once it listens. */
export async function startServer(
  options: { dataDir?: string; env?: Record<string, string> } = {},
): Promise<RunningServer> {
  const cli = join(ROOT, 'dist', 'cli.js');
  if (!existsSync(join(ROOT, 'dist', 'console', 'index.html'))) {
    throw new Error('The console is not built: run `npm run build` (npm run test:e2e does).');
  }
  const dataDir = options.dataDir ?? tempDir();
  // SQLite in the data directory whatever the calling shell points at.
  const dropped = new Set(['DATABASE_URL', 'TEST_DATABASE_URL', 'STORAGE_DRIVER', 'API_PREFIX']);
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !dropped.has(name)),
  );
  const child = spawn(process.execPath, [cli, 'serve'], {
    cwd: ROOT,
    env: {
      ...env,
      NODE_ENV: 'test',
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: '0',
      BOOTSTRAP_API_KEY: KEY,
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'json',
      EMBEDDING_CACHE_DIR: TEST_EMBEDDING_CACHE,
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const url = await listening(child);
  return {
    url,
    dataDir,
    stop: () => stopProcess(child),
  };
}

function listening(child: ChildProcess): Promise<string> {
  return new Promise((resolveUrl, reject) => {
    let output = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`The server did not start in 60 s:\n${output}`));
    }, 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        resolveUrl(match[1]);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`The server exited (${code}) before listening:\n${output}`));
    });
  });
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((done) => {
    child.once('exit', () => {
      done();
    });
  });
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/** Debian's Chromium (scripts/install-chromium.sh), or CHROMIUM_PATH. */
export function chromiumPath(): string {
  const fromEnv = process.env.CHROMIUM_PATH;
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  const dirs = (process.env.PATH ?? '').split(delimiter).concat(['/usr/bin']);
  for (const dir of dirs) {
    for (const name of ['chromium', 'chromium-browser']) {
      const candidate = join(dir, name);
      if (existsSync(candidate)) return candidate;
    }
  }
  throw new Error(
    'No Chromium found: run `bash scripts/install-chromium.sh` (or set CHROMIUM_PATH).',
  );
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    // Root in a container has no user namespaces for Chromium's sandbox.
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
}

/** A page whose console errors and uncaught exceptions are collected (see `errors`). */
export interface WatchedPage {
  context: BrowserContext;
  page: Page;
  /** Every console error and page error so far, except those `expectError` allowed. */
  errors: string[];
  /**
   * Allows console errors matching `pattern` (the browser logs every failed request itself) until
   * the returned function is called.
   */
  expectError(pattern: RegExp): () => void;
}

export async function openPage(browser: Browser, baseURL: string): Promise<WatchedPage> {
  const context = await browser.newContext({
    baseURL,
    viewport: { width: 1280, height: 900 },
    reducedMotion: 'reduce',
  });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseURL });
  const page = await context.newPage();
  const allowed: RegExp[] = [];
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const text = `console: ${message.text()} (${message.location().url})`;
    if (!allowed.some((pattern) => pattern.test(text))) errors.push(text);
  });
  page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`));
  return {
    context,
    page,
    errors,
    expectError: (pattern) => {
      allowed.push(pattern);
      return () => allowed.splice(allowed.indexOf(pattern), 1);
    },
  };
}

/** Screenshots of the page as it is, at each width, into test-artifacts/console/. */
export async function screenshots(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const original = page.viewportSize() ?? { width: 1280, height: 900 };
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: 900 });
    await page.screenshot({ path: join(ARTIFACTS, `${name}-${width}.png`), fullPage: true });
    // Usable at this width: nothing makes the page itself scroll sideways (wide tables scroll
    // inside their own box).
    const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
    if (scrollWidth > width) {
      throw new Error(`${name} at ${width} px is ${scrollWidth} px wide: it scrolls sideways`);
    }
  }
  await page.setViewportSize(original);
}

/** Signs in through the form. */
export async function signIn(page: Page, key = KEY): Promise<void> {
  await page.goto('/console/');
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

/** A test file's console: the server and the watched page on it (set once its tests run). */
export interface ConsoleUnderTest {
  server: RunningServer;
  w: WatchedPage;
}

/**
 * Registers a test file's hooks: before its tests, the server `start` gives (by default a fresh
 * one) and a browser page on it; after each test, no page error; after them all, everything
 * closed. The returned object holds the server and the page by the time the tests run.
 */
export function useConsole(
  start: () => Promise<RunningServer> = () => startServer(),
): ConsoleUnderTest {
  const t = {} as ConsoleUnderTest;
  let browser: Browser;
  beforeAll(async () => {
    [t.server, browser] = await Promise.all([start(), launchBrowser()]);
    t.w = await openPage(browser, t.server.url);
  });
  afterAll(async () => {
    await t.w.context.close();
    await browser.close();
    await t.server.stop();
  });
  afterEach(() => {
    expect(t.w.errors).toEqual([]);
  });
  return t;
}

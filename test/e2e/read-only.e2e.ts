/**
 * Read-only mode in the browser: a data directory whose database has a migration this build does
 * not know (as after a downgrade) starts read-only (src/context.ts). The console then shows the
 * banner on every page and disables what the server would refuse.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  launchBrowser,
  openPage,
  screenshots,
  signIn,
  startServer,
  type RunningServer,
  type WatchedPage,
} from './harness.js';

let server: RunningServer;
let browser: Browser;
let w: WatchedPage;

beforeAll(async () => {
  const first = await startServer();
  await first.stop();
  const db = new Database(join(first.dataDir, 'aps.sqlite'));
  db.prepare('insert into aps_migrations (name, applied_at) values (?, ?)').run(
    '9999_from_a_newer_build',
    new Date().toISOString(),
  );
  db.close();
  [server, browser] = await Promise.all([startServer({ dataDir: first.dataDir }), launchBrowser()]);
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

describe('console in read-only mode', () => {
  it('shows the banner on every page and disables what would fail', async () => {
    await signIn(w.page);
    const banner = w.page.locator('.banner');
    await banner.waitFor();
    expect(await banner.textContent()).toMatch(/Read-only mode/);
    expect(await banner.textContent()).toMatch(/9999_from_a_newer_build/);

    expect(await w.page.getByLabel('Upload files', { exact: true }).isDisabled()).toBe(true);
    await screenshots(w.page, 'read-only-documents');

    await w.page.getByRole('link', { name: 'API keys', exact: true }).click();
    await w.page.getByLabel('Name', { exact: true }).fill('x');
    expect(await w.page.getByRole('button', { name: 'Create key', exact: true }).isDisabled()).toBe(
      true,
    );
    await w.page.getByRole('button', { name: 'Revoke', exact: true }).first().waitFor();
    for (const name of ['Revoke', 'Rotate']) {
      const buttons = await w.page.getByRole('button', { name, exact: true }).all();
      for (const button of buttons) expect(await button.isDisabled()).toBe(true);
    }
    expect(await banner.isVisible()).toBe(true);

    await w.page.getByRole('link', { name: 'Search', exact: true }).click();
    expect(await banner.isVisible()).toBe(true);
    await w.page.getByRole('link', { name: 'System', exact: true }).click();
    await w.page.getByRole('region', { name: 'Health' }).getByText('read_only').waitFor();
    expect(await banner.isVisible()).toBe(true);
    await screenshots(w.page, 'read-only-system');
  });
});

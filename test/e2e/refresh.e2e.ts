/**
 * The console keeps its session alive without the API key: with tokens that live 6 s, it exchanges
 * each for a new one (`POST /auth/token/refresh`) before it expires, so the tab stays signed in
 * well past the first token's expiry and its calls keep working.
 */
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  KEY,
  launchBrowser,
  openPage,
  signIn,
  startServer,
  type RunningServer,
  type WatchedPage,
} from './harness.js';

let server: RunningServer;
let browser: Browser;
let w: WatchedPage;

beforeAll(async () => {
  [server, browser] = await Promise.all([startServer({ env: { JWT_TTL: '6s' } }), launchBrowser()]);
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

const stored = () =>
  w.page.evaluate(
    () =>
      JSON.parse(sessionStorage.getItem('aps.console.session') ?? 'null') as {
        token: string;
        expiresAt: string;
      } | null,
  );

describe('console session refresh', () => {
  it('refreshes the token before it expires and stays signed in past the first expiry', async () => {
    await signIn(w.page);
    const first = await stored();
    expect(first).not.toBeNull();
    // Past the first token's expiry (6 s) by a margin.
    await w.page.waitForTimeout(Date.parse(first!.expiresAt) - Date.now() + 3000);
    const later = await stored();
    expect(later).not.toBeNull();
    expect(later!.token).not.toBe(first!.token);
    expect(Date.parse(later!.expiresAt)).toBeGreaterThan(Date.parse(first!.expiresAt));
    // Still signed in, and the API still answers it.
    await w.page.getByRole('link', { name: 'Search', exact: true }).click();
    await w.page.getByRole('link', { name: 'Documents', exact: true }).click();
    await w.page.getByRole('columnheader', { name: 'Name', exact: true }).waitFor();
    expect(await w.page.getByRole('button', { name: 'Sign out' }).isVisible()).toBe(true);
    expect(await w.page.getByLabel('API key').count()).toBe(0);
    // The key itself is still kept nowhere.
    const everything = await w.page.evaluate(() =>
      [sessionStorage, localStorage]
        .flatMap((storage) => Object.keys(storage).map((k) => `${k}=${storage.getItem(k)}`))
        .join('\n'),
    );
    expect(everything).not.toContain(KEY);
  });
});

/**
 * The console keeps its session alive without the API key: with tokens that live 6 s, it exchanges
 * each for a new one (`POST /auth/token/refresh`) before it expires, so the tab stays signed in
 * well past the first token's expiry and its calls keep working.
 */
import { describe, expect, it } from 'vitest';
import { KEY, signIn, startServer, useConsole } from './harness.js';

const t = useConsole(() => startServer({ env: { JWT_TTL: '6s' } }));

const stored = () =>
  t.w.page.evaluate(
    () =>
      JSON.parse(sessionStorage.getItem('aps.console.session') ?? 'null') as {
        token: string;
        expiresAt: string;
      } | null,
  );

describe('console session refresh', () => {
  it('refreshes the token before it expires and stays signed in past the first expiry', async () => {
    await signIn(t.w.page);
    const first = await stored();
    expect(first).not.toBeNull();
    // Past the first token's expiry (6 s) by a margin.
    await t.w.page.waitForTimeout(Date.parse(first!.expiresAt) - Date.now() + 3000);
    const later = await stored();
    expect(later).not.toBeNull();
    expect(later!.token).not.toBe(first!.token);
    expect(Date.parse(later!.expiresAt)).toBeGreaterThan(Date.parse(first!.expiresAt));
    // Still signed in, and the API still answers it.
    await t.w.page.getByRole('link', { name: 'Search', exact: true }).click();
    await t.w.page.getByRole('link', { name: 'Documents', exact: true }).click();
    await t.w.page.getByRole('columnheader', { name: 'Name', exact: true }).waitFor();
    expect(await t.w.page.getByRole('button', { name: 'Sign out' }).isVisible()).toBe(true);
    expect(await t.w.page.getByLabel('API key').count()).toBe(0);
    // The key itself is still kept nowhere.
    const everything = await t.w.page.evaluate(() =>
      [sessionStorage, localStorage]
        .flatMap((storage) => Object.keys(storage).map((k) => `${k}=${storage.getItem(k)}`))
        .join('\n'),
    );
    expect(everything).not.toContain(KEY);
  });
});

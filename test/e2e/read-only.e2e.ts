/**
 * Read-only mode in the browser: a data directory whose database has a migration this build does
 * not know (as after a downgrade) starts read-only (src/context.ts). The console then shows the
 * banner on every page and disables what the server would refuse.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { screenshots, signIn, startServer, useConsole } from './harness.js';

const t = useConsole(async () => {
  const first = await startServer();
  await first.stop();
  const db = new Database(join(first.dataDir, 'aps.sqlite'));
  db.prepare('insert into aps_migrations (name, applied_at) values (?, ?)').run(
    '9999_from_a_newer_build',
    new Date().toISOString(),
  );
  db.close();
  return startServer({ dataDir: first.dataDir });
});

describe('console in read-only mode', () => {
  it('shows the banner on every page and disables what would fail', async () => {
    await signIn(t.w.page);
    const banner = t.w.page.locator('.banner');
    await banner.waitFor();
    expect(await banner.textContent()).toMatch(/Read-only mode/);
    expect(await banner.textContent()).toMatch(/9999_from_a_newer_build/);

    expect(await t.w.page.getByLabel('Upload files', { exact: true }).isDisabled()).toBe(true);
    await screenshots(t.w.page, 'read-only-documents');

    await t.w.page.getByRole('link', { name: 'API keys', exact: true }).click();
    await t.w.page.getByLabel('Name', { exact: true }).fill('x');
    expect(
      await t.w.page.getByRole('button', { name: 'Create key', exact: true }).isDisabled(),
    ).toBe(true);
    await t.w.page.getByRole('button', { name: 'Revoke', exact: true }).first().waitFor();
    for (const name of ['Revoke', 'Rotate']) {
      const buttons = await t.w.page.getByRole('button', { name, exact: true }).all();
      for (const button of buttons) expect(await button.isDisabled()).toBe(true);
    }
    expect(await banner.isVisible()).toBe(true);

    await t.w.page.getByRole('link', { name: 'Search', exact: true }).click();
    expect(await banner.isVisible()).toBe(true);
    await t.w.page.getByRole('link', { name: 'System', exact: true }).click();
    await t.w.page.getByRole('region', { name: 'Health' }).getByText('read_only').waitFor();
    expect(await banner.isVisible()).toBe(true);
    await screenshots(t.w.page, 'read-only-system');
  });
});

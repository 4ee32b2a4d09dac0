/**
 * The console in a real browser against the built server: sign in (and a wrong key), upload two
 * files with indexing and watch them reach `indexed` live, open one (pages, chunks, markdown),
 * search (the right passage first, with <mark>), delete with confirmation, create, rotate and
 * revoke a key, the System page. One server and one browser for the file; the tests run in order.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { KEY, screenshots, tempDir, useConsole } from './harness.js';

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
});

const t = useConsole();

describe('console', () => {
  it('/ redirects to the console, served with a strict CSP', async () => {
    const response = await t.w.page.goto('/');
    expect(t.w.page.url()).toMatch(new RegExp(`^${t.server.url}/console/(#/.*)?$`));
    const csp = response?.headers()['content-security-policy'] ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe');
  });

  it('a wrong key shows the server’s message', async () => {
    // The browser logs the refused request itself.
    const done = t.w.expectError(/status of 401 .*\/api\/v1\/auth\/token/);
    await t.w.page.goto('/console/');
    await screenshots(t.w.page, 'sign-in');
    await t.w.page
      .getByLabel('API key', { exact: true })
      .fill('aps_not-a-real-key-000000000000000000');
    await t.w.page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect
      .poll(() => t.w.page.getByRole('alert').textContent())
      .toBe('The API key is invalid or revoked.');
    expect(await t.w.page.evaluate(() => sessionStorage.getItem('aps.console.session'))).toBeNull();
    done();
  });

  it('signs in with the keyboard; keeps the JWT, never the key, in sessionStorage', async () => {
    await t.w.page.goto('/console/');
    await t.w.page.getByLabel('API key', { exact: true }).focus();
    await t.w.page.keyboard.type(KEY);
    await t.w.page.keyboard.press('Enter');
    await t.w.page.getByRole('button', { name: 'Sign out', exact: true }).waitFor();
    const session = await t.w.page.evaluate(() => sessionStorage.getItem('aps.console.session'));
    expect(JSON.parse(session ?? '{}')).toMatchObject({ token: expect.stringMatching(/^eyJ/) });
    const everything = await t.w.page.evaluate(() =>
      JSON.stringify([
        Object.entries(sessionStorage),
        Object.entries(localStorage),
        document.cookie,
      ]),
    );
    expect(everything).not.toContain(KEY);
    const nav = t.w.page.getByRole('navigation', { name: 'Main' });
    for (const name of ['Documents', 'Search', 'API keys', 'Audit', 'System']) {
      await expect.poll(() => nav.getByRole('link', { name, exact: true }).count()).toBe(1);
    }
    // Keyboard: Tab reaches the Search link, Enter follows it.
    await t.w.page.getByRole('link', { name: 'Documents', exact: true }).focus();
    await t.w.page.keyboard.press('Tab');
    await t.w.page.keyboard.press('Enter');
    await t.w.page.getByRole('heading', { name: 'Search', level: 1 }).waitFor();
  });

  it(
    'uploads two files with indexing and shows them reach `indexed` live',
    { timeout: 120_000 },
    async () => {
      await t.w.page.getByRole('link', { name: 'Documents', exact: true }).click();
      const checkbox = t.w.page.getByRole('checkbox', { name: 'Index after upload', exact: true });
      expect(await checkbox.isChecked()).toBe(true);
      for (const name of ['Name', 'Status', 'Project', 'Chunks', 'Updated']) {
        await t.w.page.getByRole('columnheader', { name, exact: true }).waitFor();
      }
      await t.w.page.getByLabel('New project id', { exact: true }).fill('nature');
      await t.w.page.getByRole('button', { name: 'Use project', exact: true }).click();
      expect(await t.w.page.getByLabel('Project', { exact: true }).inputValue()).toBe('nature');
      await t.w.page
        .getByLabel('Upload files', { exact: true })
        .setInputFiles([join(files, 'aurora.md'), join(files, 'tides.md')]);
      for (const name of ['aurora.md', 'tides.md']) {
        const row = t.w.page.getByRole('row').filter({ has: t.w.page.getByRole('link', { name }) });
        await expect
          .poll(() => row.getByRole('cell').nth(1).textContent(), { timeout: 90_000 })
          .toBe('indexed');
        expect(await row.getByRole('cell').nth(2).textContent()).toBe('nature');
        expect(Number(await row.getByRole('cell').nth(3).textContent())).toBeGreaterThan(0);
      }
      await screenshots(t.w.page, 'documents');
    },
  );

  it('opens a document: metadata (editable), converter details, chunks by page, markdown', async () => {
    await t.w.page.getByRole('link', { name: 'aurora.md', exact: true }).click();
    await t.w.page.getByRole('heading', { name: 'aurora.md', level: 1 }).waitFor();
    const chunks = t.w.page.locator('.chunk');
    await expect.poll(() => chunks.count()).toBeGreaterThan(0);
    // Section trails with each chunk; the markdown rendered (headings are headings).
    await t.w.page.getByText('Auroras › How they form').first().waitFor();
    await t.w.page.locator('.markdown h2', { hasText: 'How they form' }).waitFor();
    await t.w.page.getByText('Converter details (auto)').click();
    await t.w.page.locator('pre', { hasText: '"chunkCount"' }).waitFor();
    await screenshots(t.w.page, 'document');
    // Edit the metadata and save; the API has it.
    await t.w.page.getByLabel('Metadata (JSON)', { exact: true }).fill('{"topic": "sky"}');
    await t.w.page.getByRole('button', { name: 'Save', exact: true }).click();
    await t.w.page.getByText('Saved.').waitFor();
    const id = /#\/documents\/([^/?#]+)/.exec(t.w.page.url())?.[1];
    const res = await t.w.page.request.get(`${t.server.url}/api/v1/knowledge/documents/${id}`, {
      headers: { 'x-api-key': KEY },
    });
    expect(((await res.json()) as { metadata: unknown }).metadata).toEqual({ topic: 'sky' });
  });

  it('searches: the right passage first, query words in <mark>, a citation to copy', async () => {
    await t.w.page.getByRole('link', { name: 'Search', exact: true }).click();
    await t.w.page.getByLabel('Query', { exact: true }).fill('charged particles solar wind');
    await t.w.page.getByLabel('Mode', { exact: true }).selectOption('hybrid');
    await t.w.page.getByLabel('Top K', { exact: true }).fill('5');
    await t.w.page.getByLabel('Min score', { exact: true }).fill('0.1');
    await t.w.page.getByRole('button', { name: 'Search', exact: true }).click();
    const results = t.w.page.getByRole('list', { name: 'Results' });
    const first = results.getByRole('listitem').first();
    await first.waitFor();
    expect(await first.getByRole('link').first().textContent()).toBe('aurora.md');
    expect(await first.textContent()).toContain('Auroras › How they form');
    const marks = await first.locator('mark').allTextContents();
    expect(marks.map((m) => m.toLowerCase())).toEqual(
      expect.arrayContaining(['charged', 'particles', 'solar', 'wind']),
    );
    await first.getByRole('button', { name: 'Copy citation', exact: true }).click();
    await first.getByText('Citation copied.').waitFor();
    const copied = await t.w.page.evaluate(() => navigator.clipboard.readText());
    expect(copied).toMatch(
      /^“.*charged particles of the solar wind.*” \(aurora\.md, § Auroras › How they form\)$/,
    );
    await screenshots(t.w.page, 'search');
    // The metadata filter (saved on the document above) keeps only aurora.md.
    await t.w.page.getByLabel('Query', { exact: true }).fill('tides moon');
    await t.w.page.getByLabel('Min score', { exact: true }).fill('');
    await t.w.page.getByLabel('Metadata filter', { exact: true }).fill('{"topic": "sky"}');
    await t.w.page.getByRole('button', { name: 'Search', exact: true }).click();
    await expect
      .poll(async () => [...new Set(await results.getByRole('link').allTextContents())])
      .toEqual(['aurora.md']);
    // A bad filter is refused with a message before anything is sent.
    await t.w.page.getByLabel('Metadata filter', { exact: true }).fill('{not json');
    await t.w.page.getByRole('button', { name: 'Search', exact: true }).click();
    await t.w.page.getByRole('alert').getByText('The metadata filter is not valid JSON.').waitFor();
  });

  it('deletes a document after confirming in a dialog', async () => {
    await t.w.page.getByRole('link', { name: 'Documents', exact: true }).click();
    const row = t.w.page
      .getByRole('row')
      .filter({ has: t.w.page.getByRole('link', { name: 'tides.md' }) });
    await row.getByRole('button', { name: 'Delete', exact: true }).click();
    const dialog = t.w.page.getByRole('dialog', { name: 'Delete tides.md?' });
    await dialog.waitFor();
    await screenshots(t.w.page, 'delete-dialog');
    // Cancel keeps it; Delete in the dialog removes it.
    await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect(await row.count()).toBe(1);
    await row.getByRole('button', { name: 'Delete', exact: true }).click();
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
    await row.waitFor({ state: 'detached' });
    const response = await t.w.page.request.get(`${t.server.url}/api/v1/knowledge/documents`, {
      headers: { 'x-api-key': KEY },
    });
    const names = ((await response.json()) as { items: { name: string }[] }).items.map(
      (d) => d.name,
    );
    expect(names).toEqual(['aurora.md']);
  });

  it('creates a key (shown once, with Copy), rotates it and revokes the new one', async () => {
    await t.w.page.getByRole('link', { name: 'API keys', exact: true }).click();
    await t.w.page.getByLabel('Name', { exact: true }).fill('ci robot');
    await t.w.page.getByLabel('Level', { exact: true }).selectOption('L2');
    await t.w.page.getByRole('button', { name: 'Create key', exact: true }).click();
    const raw = t.w.page.getByLabel('New API key', { exact: true });
    await raw.waitFor();
    const created = await raw.inputValue();
    expect(created).toMatch(/^aps_/);
    await t.w.page.getByRole('button', { name: 'Copy', exact: true }).click();
    expect(await t.w.page.evaluate(() => navigator.clipboard.readText())).toBe(created);
    await screenshots(t.w.page, 'api-keys');
    await t.w.page.getByRole('button', { name: 'Done', exact: true }).click();
    expect(await raw.count()).toBe(0);
    const row = t.w.page
      .getByRole('row')
      .filter({ hasText: 'ci robot' })
      .filter({ hasText: 'active' });
    await row.getByRole('button', { name: 'Rotate', exact: true }).click();
    const rotated = await raw.inputValue();
    expect(rotated).toMatch(/^aps_/);
    expect(rotated).not.toBe(created);
    await expect.poll(() => row.count()).toBe(1);
    await row.getByRole('button', { name: 'Revoke', exact: true }).click();
    await t.w.page
      .getByRole('dialog', { name: 'Revoke ci robot?' })
      .getByRole('button', { name: 'Revoke', exact: true })
      .click();
    await expect.poll(() => row.count()).toBe(0);
    // Both keys are refused by the API now.
    for (const key of [created, rotated]) {
      const res = await t.w.page.request.get(`${t.server.url}/api/v1/knowledge/documents`, {
        headers: { 'x-api-key': key },
      });
      expect(res.status()).toBe(401);
    }
  });

  it('creates a read-only key for one project; the Audit page shows who did what, filtered', async () => {
    await t.w.page.getByRole('link', { name: 'API keys', exact: true }).click();
    await t.w.page.getByLabel('Name', { exact: true }).fill('ops reader');
    await t.w.page.getByLabel('Level', { exact: true }).selectOption('L0');
    await t.w.page.getByLabel('Access', { exact: true }).selectOption('read');
    await t.w.page.getByLabel('Projects', { exact: true }).fill('ops');
    // The key rotated by the previous test may still be on show: read this key once it replaced it.
    await t.w.page.getByRole('button', { name: 'Create key', exact: true }).click();
    await t.w.page.getByText('New key “ops reader” (L0)').waitFor();
    const raw = t.w.page.getByLabel('New API key', { exact: true });
    const reader = await raw.inputValue();
    await t.w.page.getByRole('button', { name: 'Done', exact: true }).click();
    const row = t.w.page.getByRole('row').filter({ hasText: 'ops reader' });
    await row.getByRole('cell', { name: 'read · ops', exact: true }).waitFor();
    // The key is what the console said: it may read ops, nothing else, and not change anything.
    const headers = { 'x-api-key': reader };
    const list = await t.w.page.request.get(`${t.server.url}/api/v1/knowledge/documents`, {
      headers,
    });
    expect(list.status()).toBe(200);
    const other = await t.w.page.request.get(
      `${t.server.url}/api/v1/knowledge/documents?projectId=elsewhere`,
      { headers },
    );
    expect(other.status()).toBe(403);
    const upload = await t.w.page.request.post(`${t.server.url}/api/v1/knowledge/documents/text`, {
      headers,
      data: { name: 'x.md', text: 'x', projectId: 'ops' },
    });
    expect(upload.status()).toBe(403);

    await t.w.page.getByRole('link', { name: 'Audit', exact: true }).click();
    await t.w.page.getByRole('heading', { name: 'Audit', level: 1 }).waitFor();
    const table = t.w.page.getByRole('table');
    await table.getByText('access.refused').first().waitFor();
    await table.getByText('api_key.create').first().waitFor();
    await table.getByText('document.create').first().waitFor();
    await t.w.page.getByLabel('Action', { exact: true }).selectOption('access.refused');
    await expect
      .poll(async () => {
        const actions = await table.locator('tbody tr td:nth-child(2)').allTextContents();
        return actions.length > 0 && actions.every((a) => a.trim() === 'access.refused');
      })
      .toBe(true);
    await table.getByRole('cell', { name: 'ops reader', exact: true }).first().waitFor();
    await screenshots(t.w.page, 'audit');
  });

  it('shows the system: health, converter, embedding model, counts', async () => {
    await t.w.page.getByRole('link', { name: 'System', exact: true }).click();
    const health = t.w.page.getByRole('region', { name: 'Health' });
    await health.getByText('normal').waitFor();
    await t.w.page.getByRole('region', { name: 'Converter' }).getByText('auto').first().waitFor();
    const knowledge = t.w.page.getByRole('region', { name: 'Knowledge' });
    await knowledge.getByText(/1 \(1 indexed/).waitFor();
    expect(await knowledge.textContent()).toMatch(/Embedding model\s*\S+/);
    await t.w.page.getByRole('cell', { name: 'knowledgeIndex', exact: true }).waitFor();
    await screenshots(t.w.page, 'system');
    expect(await t.w.page.locator('.banner').count()).toBe(0);
  });

  it('Sign out forgets the token', async () => {
    await t.w.page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await t.w.page.getByLabel('API key', { exact: true }).waitFor();
    expect(await t.w.page.evaluate(() => sessionStorage.getItem('aps.console.session'))).toBeNull();
    await t.w.page.reload();
    await t.w.page.getByLabel('API key', { exact: true }).waitFor();
  });
});

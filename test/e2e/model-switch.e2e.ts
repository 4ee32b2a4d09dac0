/**
 * A change of the embedding model seen in the console: the System page shows which model answers
 * meanwhile and offers to re-index the stale documents; after the button, the new model answers.
 * A server indexes a document with the default model, then restarts on an OpenAI-compatible one
 * (a real local HTTP server).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddingServer } from '../embedding-server.js';
import { KEY, signIn, startServer, useConsole } from './harness.js';

let embeddings: Awaited<ReturnType<typeof startEmbeddingServer>>;
beforeAll(async () => {
  embeddings = await startEmbeddingServer();
});
afterAll(() => embeddings.close());

async function indexed(url: string, name: string): Promise<void> {
  const res = await fetch(`${url}/api/v1/knowledge/documents/text`, {
    method: 'POST',
    headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ name, text: '# Otters\n\nSea otters hold hands while they sleep.' }),
  });
  const doc = (await res.json()) as { id: string };
  const index = await fetch(`${url}/api/v1/knowledge/documents/${doc.id}/index`, {
    method: 'POST',
    headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
    body: '{}',
  });
  expect(index.status).toBe(201);
}

const t = useConsole(async () => {
  const first = await startServer();
  await indexed(first.url, 'otters.md');
  await first.stop();
  return startServer({
    dataDir: first.dataDir,
    env: {
      EMBEDDING_PROVIDER: 'openai',
      EMBEDDING_MODEL: 'test-model',
      EMBEDDING_BASE_URL: embeddings.url,
    },
  });
});

describe('a change of the embedding model', () => {
  it('System shows the model answering meanwhile; its button re-indexes the stale documents', async () => {
    const { page } = t.w;
    await signIn(page);
    await page.getByRole('link', { name: 'System', exact: true }).click();
    const knowledge = page.getByRole('region', { name: 'Knowledge' });
    await knowledge.getByText('openai:test-model').waitFor();
    const answering = knowledge.getByTestId('model-switch');
    expect(await answering.textContent()).toMatch(/glove-sif-100d: 0 of 1 chunks/);
    await knowledge.getByRole('button', { name: 'Re-index 1 stale document' }).click();
    await page.getByRole('status').getByText('1 document queued for re-indexing').waitFor();
    // Once the document is re-embedded, the next count (at most 5 s later) switches the model.
    const deadline = Date.now() + 30_000;
    while ((await answering.count()) > 0 || (await knowledge.getByText(/1 stale/).count()) > 0) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 500));
      await page.getByRole('link', { name: 'Documents', exact: true }).click();
      await page.getByRole('link', { name: 'System', exact: true }).click();
      await knowledge.waitFor();
    }
    expect(await knowledge.textContent()).toMatch(/0 failed, 0 stale/);
    expect(await knowledge.getByRole('button', { name: /Re-index/ }).count()).toBe(0);
  });
});

/** Re-indexing reuses the stored markdown when the conversion key is unchanged. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { allGone } from '../../converter/helpers.js';
import { commandsFile, converterScript, tempDir } from '../../helpers.js';
import { knowledgeApp } from '../helpers.js';

/** Two commands running one counting converter: each run appends a line to `runs.log`. */
function countingCommands(dir: string): { file: string; runs: () => number } {
  const log = join(dir, 'runs.log');
  const script = converterScript(
    dir,
    'count.mjs',
    `import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
const [input, out] = process.argv.slice(2);
appendFileSync(${JSON.stringify(log)}, 'run\\n');
mkdirSync(out, { recursive: true });
writeFileSync(out + '/document.md', readFileSync(input, 'utf8'));
writeFileSync(out + '/meta.json', JSON.stringify({ converter: 'count', format: 'markdown' }));`,
  );
  const file = commandsFile(
    dir,
    ['count-a', 'count-b'].map((id) => ({ id, description: id, script })),
  );
  const runs = () => {
    try {
      return readFileSync(log, 'utf8').split('\n').filter(Boolean).length;
    } catch {
      return 0;
    }
  };
  return { file, runs };
}

describe('re-indexing without re-converting', () => {
  it('reuses the stored markdown for the same command and converts again for another', async () => {
    const { file, runs } = countingCommands(tempDir());
    const { t, k } = await knowledgeApp({ KNOWLEDGE_COMMANDS_FILE: file });
    try {
      const doc = await k.uploadOk('otters.md', '# Otters\n\nOtters hold hands while sleeping.');
      const first = await k.indexOk(doc.id, { commandId: 'count-a' });
      expect(runs()).toBe(1);
      const key = (first.document.converterMeta as { conversionKey?: string }).conversionKey;
      expect(key).toMatch(/^[0-9a-f]{64}$/);

      // Same command, other chunking: the markdown is reused, the chunks are new.
      const second = await k.indexOk(doc.id, { commandId: 'count-a', maxChars: 200 });
      expect(runs()).toBe(1);
      expect(second.document.converterMeta).toMatchObject({
        conversionKey: key,
        markdownReused: true,
        converter: 'count',
        chunking: { maxChars: 200 },
      });
      expect((await k.hits({ query: 'otters sleeping' }))[0]?.documentId).toBe(doc.id);

      // Another command id: converted again, with another key.
      const third = await k.indexOk(doc.id, { commandId: 'count-b' });
      expect(runs()).toBe(2);
      const meta = third.document.converterMeta as Record<string, unknown>;
      expect(meta.conversionKey).not.toBe(key);
      expect(meta.markdownReused).toBeUndefined();
    } finally {
      await t.close();
    }
  });

  it('reuses the markdown of the bundled converter: no worker job on the second run', async () => {
    const { t, k } = await knowledgeApp();
    try {
      // HTML: small plain text and markdown are converted in the server's process, not a worker.
      const doc = await k.uploadOk('seals.html', '<h1>Seals</h1><p>Seals sleep underwater.</p>');
      await k.indexOk(doc.id);
      const jobs = () =>
        (t.ctx.knowledge.converter.pool?.workers() ?? []).reduce((n, w) => n + w.jobs, 0);
      expect(jobs()).toBe(1);
      const again = await k.indexOk(doc.id);
      expect(jobs()).toBe(1);
      expect(again.document.converterMeta).toMatchObject({
        markdownReused: true,
        format: 'html',
      });
    } finally {
      await t.close();
    }
  });

  it('closing the server stops its converter workers', async () => {
    const { t, k } = await knowledgeApp({ CONVERTER_WORKERS: '2' });
    const docs = await Promise.all(
      ['a', 'b'].map((n) =>
        k.uploadOk(`${n}.html`, `<h1>${n}</h1><p>Text ${n} about puffins.</p>`),
      ),
    );
    await Promise.all(docs.map((d) => k.indexOk(d.id)));
    const pids = (t.ctx.knowledge.converter.pool?.workers() ?? []).map((w) => w.pid);
    expect(pids.length).toBeGreaterThan(0);
    await t.close();
    expect(await allGone(pids)).toBe(true);
  });
});

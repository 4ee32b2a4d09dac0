/**
 * Hybrid retrieval keeps an exact identifier match first: a query made of a rare
 * identifier the static model has no vector for gets a vector from its few known parts, so its
 * cosine is noise; the fusion weighs the cosine by the query's coverage and measures keyword
 * evidence against what the query could score.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../helpers.js';
import { type KnowledgeClient, knowledgeApp } from '../helpers.js';

let t: TestApp;
let k: KnowledgeClient;

/** Passages about windows (the one known part of the identifier) and one that defines it. */
const MANUAL = `# Decoder manual

## Fresh air

Open the window in the morning to let fresh air into the bedroom.

## Glass

A double-glazed window keeps the house warm in winter and quiet in summer.

## Curtains

Heavy curtains in front of a window block the light of the street at night.

## Cleaning

Clean each window with warm water and a soft cloth, then dry the glass.

## Frames

Wooden window frames need fresh paint every few years to keep out the rain.

## Tuning the decoder

Set QX_RESYNC_WINDOW to the number of frames the decoder buffers before it resynchronises.

## Streams

The decoder reads one stream at a time and reports the bitrate it measured.

## Errors

A corrupt packet is skipped and counted in the statistics of the session.
`;

beforeAll(async () => {
  ({ t, k } = await knowledgeApp());
  const doc = await k.uploadOk('manual.md', MANUAL);
  await k.indexOk(doc.id);
});
afterAll(() => t.close());

describe('hybrid retrieval of an identifier the embedding model does not know', () => {
  it('keeps the exact-match passage first, as keyword mode ranks it', async () => {
    for (const query of ['QX_RESYNC_WINDOW', 'what does QX_RESYNC_WINDOW do']) {
      const keyword = await k.hits({ query, mode: 'keyword', topK: 3 });
      expect(keyword[0]?.sectionPath, query).toBe('Decoder manual > Tuning the decoder');
      const hybrid = await k.hits({ query, topK: 5 });
      expect(hybrid[0]?.sectionPath, query).toBe('Decoder manual > Tuning the decoder');
      // The window passages (the only part of the identifier the model knows) stay well below.
      expect(hybrid[0]!.score, query).toBeGreaterThan(0.5);
      for (const hit of hybrid.slice(1))
        expect(hit.score, query).toBeLessThan(hybrid[0]!.score / 2);
    }
  });

  it('still ranks by meaning when the query is plain English', async () => {
    const hybrid = await k.hits({ query: 'how should I wash the panes', topK: 3 });
    expect(hybrid[0]?.sectionPath).toBe('Decoder manual > Cleaning');
  });
});

/**
 * Waits for a document to leave `indexing` by polling its record: the same short GET over either
 * transport (the events stream would need a long-lived response, which `app.inject` cannot give).
 */
import type { KnowledgeDocument } from '../knowledge/documents/documents.schemas.js';
import type { KnowledgeApi } from './knowledge-api.js';

/** The document once it is no longer `indexing`, or as it is when `limitMs` ran out. */
export async function waitUntilSearchable(
  api: KnowledgeApi,
  document: KnowledgeDocument,
  limitMs: number,
  signal?: AbortSignal,
): Promise<KnowledgeDocument> {
  const deadline = Date.now() + limitMs;
  let current = document;
  let pause = 50;
  while (current.status === 'indexing' && Date.now() < deadline && signal?.aborted !== true) {
    await new Promise((resolve) => setTimeout(resolve, Math.min(pause, deadline - Date.now())));
    pause = Math.min(pause * 2, 1000);
    current = await api.getDocument(current.id);
  }
  return current;
}

/** The knowledge API as the console uses it, and how a live event changes a listed page. */
import { api } from './api.js';
import type {
  BatchResult,
  DocumentMetadata,
  DocumentPage,
  KnowledgeChunk,
  KnowledgeDocument,
  MarkdownResult,
  Projects,
} from './types.js';

export const PAGE_SIZE = 20;

export function listDocuments(projectId: string, cursor: string | null): Promise<DocumentPage> {
  return api<DocumentPage>('GET', '/knowledge/documents', {
    query: {
      limit: String(PAGE_SIZE),
      order: '-createdAt',
      projectId: projectId === '' ? undefined : projectId,
      cursor: cursor ?? undefined,
    },
  });
}

export async function listProjects(): Promise<string[]> {
  const { items } = await api<Projects>('GET', '/knowledge/projects');
  return items.flatMap((item) => (item.projectId === null ? [] : [item.projectId]));
}

/** Uploads files in one batch request; each file answers on its own (created, duplicate, refused). */
export function uploadFiles(
  files: readonly File[],
  options: { projectId: string; index: boolean },
): Promise<BatchResult> {
  const form = new FormData();
  // Fields first: the server reads them before it stores any file.
  if (options.projectId !== '') form.append('projectId', options.projectId);
  form.append('source', 'console');
  if (options.index) form.append('index', 'true');
  for (const file of files) form.append('file', file, file.name);
  return api<BatchResult>('POST', '/knowledge/documents/batch', { form });
}

export async function indexDocument(id: string): Promise<KnowledgeDocument> {
  const { document } = await api<{ document: KnowledgeDocument }>(
    'POST',
    `/knowledge/documents/${encodeURIComponent(id)}/index`,
    { json: { async: true } },
  );
  return document;
}

export async function deleteDocument(id: string): Promise<void> {
  await api<{ ok: boolean }>('DELETE', `/knowledge/documents/${encodeURIComponent(id)}`);
}

export function getDocument(id: string): Promise<KnowledgeDocument> {
  return api<KnowledgeDocument>('GET', `/knowledge/documents/${encodeURIComponent(id)}`);
}

export function updateDocument(
  id: string,
  patch: { name?: string; metadata?: DocumentMetadata },
): Promise<KnowledgeDocument> {
  return api<KnowledgeDocument>('PATCH', `/knowledge/documents/${encodeURIComponent(id)}`, {
    json: patch,
  });
}

export async function getChunks(id: string): Promise<KnowledgeChunk[]> {
  const { items } = await api<{ items: KnowledgeChunk[] }>(
    'GET',
    `/knowledge/documents/${encodeURIComponent(id)}/chunks`,
  );
  return items;
}

export function getMarkdown(id: string): Promise<MarkdownResult> {
  return api<MarkdownResult>('GET', `/knowledge/documents/${encodeURIComponent(id)}/markdown`);
}

/**
 * The API's types, taken from the server's own TypeBox schemas (type-only imports: nothing of
 * the server is bundled), so the console and the API cannot drift apart.
 */
import type { Static } from 'typebox';
import type {
  ApiKeyRecordSchema,
  CreatedApiKeySchema,
  TokenResponseSchema,
} from '../../../src/auth/auth.schemas.js';
import type { AuditPageSchema } from '../../../src/audit/audit.schemas.js';
import type { HealthSchema } from '../../../src/health/health.schemas.js';
import type { BatchResultSchema } from '../../../src/knowledge/ingest/ingest.schemas.js';
import type {
  CommandsSchema,
  ConverterStatusSchema,
} from '../../../src/knowledge/indexing/indexing.schemas.js';
import type {
  DocumentPageSchema,
  KnowledgeStatusSchema,
  ProjectsSchema,
} from '../../../src/knowledge/documents/documents.schemas.js';
import type { RetrieveResultSchema } from '../../../src/knowledge/retrieval/retrieval.schemas.js';

import type { KnowledgeDocument } from '../../../src/knowledge/documents/documents.schemas.js';

export type {
  DocumentMetadata,
  KnowledgeChunk,
  KnowledgeDocument,
  Progress,
} from '../../../src/knowledge/documents/documents.schemas.js';
export type {
  RetrievalHit,
  RetrieveBody,
} from '../../../src/knowledge/retrieval/retrieval.schemas.js';
export type { MarkdownResult } from '../../../src/knowledge/markdown/markdown.schemas.js';

export type ApiKeyRecord = Static<typeof ApiKeyRecordSchema>;
export type CreatedApiKey = Static<typeof CreatedApiKeySchema>;
export type TokenResponse = Static<typeof TokenResponseSchema>;
export type AuditPage = Static<typeof AuditPageSchema>;
export type AuditItem = AuditPage['items'][number];
export type Health = Static<typeof HealthSchema>;
export type DocumentPage = Static<typeof DocumentPageSchema>;
export type Projects = Static<typeof ProjectsSchema>;
export type KnowledgeStatus = Static<typeof KnowledgeStatusSchema>;
export type ConverterStatus = Static<typeof ConverterStatusSchema>;
export type Commands = Static<typeof CommandsSchema>;
export type BatchResult = Static<typeof BatchResultSchema>;
export type RetrieveResult = Static<typeof RetrieveResultSchema>;
export type Level = ApiKeyRecord['level'];
export type KeyAccess = ApiKeyRecord['access'];

/** The error body every failed API call answers with. */
export interface ErrorBody {
  statusCode: number;
  code: string;
  message: string;
}

/** One event of the document events stream (`GET …/knowledge/events`). */
export type DocumentEvent =
  | {
      type: 'document.created' | 'document.progress' | 'document.indexed' | 'document.failed';
      document: KnowledgeDocument;
    }
  | { type: 'document.deleted'; id: string };

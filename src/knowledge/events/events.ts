/**
 * Document events for live views (`GET …/knowledge/events`): created, progress, indexed, failed,
 * deleted. Services `announce` a change; subscribers get `{type, data}` with the document record
 * as the API returns it (`{id}` for a deleted one).
 *
 * On SQLite the process is the whole server: events go straight to this process's subscribers.
 * On PostgreSQL an announcement is a NOTIFY on `aps_knowledge_events` (the type, id and project:
 * records can outgrow NOTIFY's 8,000 bytes) and every instance, this one included, loads the record
 * when its LISTEN connection hears it, in arrival order, so each instance's subscribers see every
 * instance's events.
 */
import { EventEmitter } from 'node:events';
import type { FastifyBaseLogger } from 'fastify';
import type pg from 'pg';
import type { DocumentsRepository } from '../documents/documents.repository.js';
import type { KnowledgeDocument } from '../documents/documents.schemas.js';
import { toDocument } from '../documents/records.js';

export const DOCUMENT_EVENTS = [
  'document.created',
  'document.progress',
  'document.indexed',
  'document.failed',
  'document.deleted',
] as const;
export type DocumentEventType = (typeof DOCUMENT_EVENTS)[number];

export interface DocumentEvent {
  type: DocumentEventType;
  data: KnowledgeDocument | { id: string };
  /** The document's project, for subscribers that follow one project. */
  projectId: string | null;
}

export type EventListener = (event: DocumentEvent) => void;

/**
 * What an announcement carries: the record when the announcer has it, else the id to load (the
 * project only matters for a deleted document, whose record is gone).
 */
export type Announced = KnowledgeDocument | { id: string; projectId: string | null };

const CHANNEL = 'aps_knowledge_events';

/** A NOTIFY payload (unchecked JSON as received). */
interface Notice {
  t?: unknown;
  id?: unknown;
  p?: unknown;
}

export class KnowledgeEvents {
  private readonly emitter = new EventEmitter();
  private listener: { stop(): Promise<void> | undefined; readonly client?: unknown } | undefined;
  /** Records are loaded one after the other, so events keep the order they were announced in. */
  private loading: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly repo: DocumentsRepository,
    private readonly log: FastifyBaseLogger,
    /** PostgreSQL: the pool whose settings the LISTEN connection uses and NOTIFYs go through. */
    private readonly pool?: pg.Pool,
  ) {
    this.emitter.setMaxListeners(0);
  }

  /**
   * PostgreSQL: opens the LISTEN connection (reconnected until `close`), at the first subscriber:
   * an instance nobody follows does not hold one.
   */
  private async listen(): Promise<void> {
    if (this.pool === undefined || this.listener !== undefined || this.closed) return;
    const placeholder = { stop: () => undefined };
    this.listener = placeholder;
    const { QueueListener } = await import('../../queue/postgres/listener.js');
    // Closed meanwhile (close() dropped the placeholder).
    if (this.listener !== placeholder) return;
    const listener = new QueueListener({
      poolOptions: this.pool.options,
      channel: CHANNEL,
      log: this.log,
      onNotice: (notice) => {
        this.heard(notice);
      },
      onConnected: () => undefined,
    });
    listener.start();
    this.listener = listener;
  }

  /** Subscribes; returns the unsubscribe function. */
  subscribe(listener: EventListener): () => void {
    void this.listen().catch((error: unknown) => {
      this.log.warn({ err: error }, 'could not listen for document events');
    });
    this.emitter.on('event', listener);
    return () => this.emitter.off('event', listener);
  }

  /** PostgreSQL: whether the LISTEN connection is up (events of other instances arrive). */
  get listening(): boolean {
    return this.listener?.client !== undefined;
  }

  get subscribers(): number {
    return this.emitter.listenerCount('event');
  }

  /** Announces a change of the document; never throws (a lost event must not fail the change). */
  announce(type: DocumentEventType, document: Announced): void {
    const projectId = document.projectId;
    if (this.pool !== undefined) {
      const payload = JSON.stringify({ t: type, id: document.id, p: projectId });
      this.pool.query('select pg_notify($1, $2)', [CHANNEL, payload]).catch((error: unknown) => {
        this.log.warn({ err: error, type }, 'could not announce a document event');
      });
      return;
    }
    if (type === 'document.deleted') {
      this.emit({ type, data: { id: document.id }, projectId });
    } else if ('status' in document) {
      this.emit({ type, data: document, projectId });
    } else {
      this.load(type, document.id);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const listener = this.listener;
    this.listener = undefined;
    await listener?.stop();
    this.emitter.removeAllListeners();
  }

  private heard(notice: Notice): void {
    const { t: type, id, p: projectId } = notice;
    if (!DOCUMENT_EVENTS.includes(type as DocumentEventType) || typeof id !== 'string') return;
    const project = typeof projectId === 'string' ? projectId : null;
    if (type === 'document.deleted') {
      // Behind the loads in progress, so it never overtakes an earlier event of the document.
      this.loading = this.loading.then(() => {
        this.emit({ type, data: { id }, projectId: project });
      });
    } else this.load(type as DocumentEventType, id);
  }

  private load(type: DocumentEventType, id: string): void {
    this.loading = this.loading
      .then(async () => {
        if (this.subscribers === 0) return;
        const row = await this.repo.findById(id);
        // Deleted meanwhile: its `document.deleted` follows.
        if (row !== undefined)
          this.emit({ type, data: toDocument(row), projectId: row.project_id });
      })
      .catch((error: unknown) => {
        this.log.warn({ err: error, type, documentId: id }, 'could not load an event document');
      });
  }

  private emit(event: DocumentEvent): void {
    this.emitter.emit('event', event);
  }
}

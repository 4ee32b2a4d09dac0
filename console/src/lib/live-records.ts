/**
 * How live events change a listed page of documents. Events and list answers can cross (a page
 * requested before an event may arrive after it), so the newest record of each document wins.
 */
import type { DocumentEvent, KnowledgeDocument } from './types.js';

const STATUS_RANK = { uploaded: 0, indexing: 1, indexed: 2, failed: 2 } as const;

/**
 * Whether record `a` of a document is at least as new as `b`. Events and list answers can cross
 * (a page requested before an event may arrive after it), so the console keeps the newer: a higher
 * version (each index run adds one), else a later `updatedAt`, else the further status.
 */
export function isNewer(a: KnowledgeDocument, b: KnowledgeDocument): boolean {
  if (a.version !== b.version) return a.version > b.version;
  const at = Date.parse(a.updatedAt) - Date.parse(b.updatedAt);
  if (at !== 0) return at > 0;
  return STATUS_RANK[a.status] >= STATUS_RANK[b.status];
}

/** The newest record of every document the events told of, and the deleted ids. */
export class LiveRecords {
  private readonly latest = new Map<string, KnowledgeDocument>();
  private readonly deleted = new Set<string>();

  /** Records an event; false when it told nothing newer. */
  note(event: DocumentEvent): boolean {
    if (event.type === 'document.deleted') {
      this.deleted.add(event.id);
      this.latest.delete(event.id);
      return true;
    }
    const known = this.latest.get(event.document.id);
    if (known !== undefined && !isNewer(event.document, known)) return false;
    this.latest.set(event.document.id, event.document);
    return true;
  }

  /** A page (from an event or a list answer) with every record at its newest, deleted ones out. */
  merge(items: readonly KnowledgeDocument[]): KnowledgeDocument[] {
    return items
      .filter((d) => !this.deleted.has(d.id))
      .map((d) => {
        const known = this.latest.get(d.id);
        return known !== undefined && !isNewer(d, known) ? known : d;
      });
  }
}

/** Whether an event should reload the first page (a document it does not show yet). */
export function needsReload(
  items: readonly KnowledgeDocument[],
  event: DocumentEvent,
  onFirstPage: boolean,
): boolean {
  return (
    onFirstPage &&
    event.type === 'document.created' &&
    !items.some((d) => d.id === event.document.id)
  );
}

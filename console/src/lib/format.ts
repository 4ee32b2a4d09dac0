/** How the console words what the API returns: statuses, pages, citations, sizes, dates. */
import type { KnowledgeDocument, RetrievalHit } from './types.js';

/** `indexing 40 % (embedding)`, `indexed`, `failed: <reason>`, `uploaded`. */
export function statusLabel(
  document: Pick<KnowledgeDocument, 'status' | 'progress' | 'errorMessage'>,
): string {
  switch (document.status) {
    case 'indexing': {
      const progress = document.progress;
      if (progress === null) return 'indexing';
      const total = progress.total;
      if (total === null || total === 0) return `indexing (${progress.stage})`;
      const percent = Math.min(100, Math.floor((progress.done / total) * 100));
      return `indexing ${percent} % (${progress.stage})`;
    }
    case 'failed':
      return document.errorMessage === null ? 'failed' : `failed: ${document.errorMessage}`;
    case 'indexed':
    case 'uploaded':
      return document.status;
  }
}

/** `p. 3`, `pp. 3–4`, or '' for unpaged formats. */
export function pageLabel(page: number | null, pageEnd: number | null): string {
  if (page === null) return '';
  return pageEnd !== null && pageEnd > page ? `pp. ${page}–${pageEnd}` : `p. ${page}`;
}

/** A section trail as the API gives it (`A > B > C`), for display. */
export function trailLabel(sectionPath: string): string {
  return sectionPath.trim() === '' ? '' : sectionPath.split(' > ').join(' › ');
}

/** A citation of a hit, to paste next to a quote: `“passage” (name, p. 3, § A › B)`. */
export function citation(
  hit: Pick<RetrievalHit, 'documentName' | 'page' | 'pageEnd' | 'sectionPath' | 'content'>,
  maxQuote = 300,
): string {
  const text = hit.content.replace(/\s+/g, ' ').trim();
  const quote = text.length > maxQuote ? `${text.slice(0, maxQuote - 1).trimEnd()}…` : text;
  const where = [
    hit.documentName,
    pageLabel(hit.page, hit.pageEnd),
    hit.sectionPath.trim() === '' ? '' : `§ ${trailLabel(hit.sectionPath)}`,
  ].filter((part) => part !== '');
  return `“${quote}” (${where.join(', ')})`;
}

/** `12.3 kB`: sizes in powers of 1000, as file managers show them. */
export function sizeLabel(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let value = bytes / 1000;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit] ?? 'TB'}`;
}

/** A timestamp in the reader's locale, to the minute. */
export function dateLabel(iso: string | null): string {
  if (iso === null) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime())
    ? iso
    : date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

/**
 * The converted markdown cut at the converter's page markers (`<!-- page: N -->`): the text before
 * the first marker is page 1 (or the whole text when unpaged, page null).
 */
export function splitPages(markdown: string): { page: number | null; text: string }[] {
  const marker = /^<!-- page: (\d+) -->[ \t]*$/gm;
  const parts: { page: number | null; text: string }[] = [];
  let last = 0;
  let page: number | null = null;
  for (const match of markdown.matchAll(marker)) {
    const text = markdown.slice(last, match.index);
    if (text.trim() !== '') parts.push({ page: page ?? 1, text });
    page = Number(match[1]);
    last = match.index + match[0].length;
  }
  const rest = markdown.slice(last);
  if (rest.trim() !== '' || parts.length === 0) parts.push({ page, text: rest });
  return parts;
}

/** Chunks of the last index run (`converterMeta.chunking.chunkCount`), or '—' before one. */
export function chunkCount(document: Pick<KnowledgeDocument, 'converterMeta'>): string {
  const chunking = document.converterMeta?.chunking;
  if (typeof chunking !== 'object' || chunking === null) return '—';
  const count = (chunking as { chunkCount?: unknown }).chunkCount;
  return typeof count === 'number' ? String(count) : '—';
}

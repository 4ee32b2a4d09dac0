/**
 * Pure text formatting of tool results for an LLM: retrieval hits numbered for citation, with
 * their document, page(s), section trail and score, highlights marked where markdown allows it
 * (safe-highlights.ts), within a character budget.
 */
import { markableRanges } from './safe-highlights.js';

/** A retrieval hit as the retrieve route answers it (fields the text uses). */
export interface HitLike {
  documentId: string;
  documentName: string;
  chunkIndex: number;
  sectionPath: string;
  page: number | null;
  /** Last page of the passage, when the route gives it. */
  pageEnd?: number | null;
  score: number;
  content: string;
  /** UTF-16 ranges of `content` that matched the query, when the route gives them. */
  highlights?: { start: number; end: number }[];
}

/** Marks around highlighted text: bold in markdown, which models read as emphasis. */
const MARK = '**';
/** Below this many characters a passage is not worth showing cut: the hit is left out. */
const MIN_PASSAGE = 160;

/** A start or end offset that does not split a surrogate pair. */
function safe(text: string, offset: number): number {
  const code = text.charCodeAt(offset);
  return offset > 0 && offset < text.length && code >= 0xdc00 && code <= 0xdfff
    ? offset - 1
    : offset;
}

/**
 * The passage of a hit with its highlights marked, in at most `budget` characters (marks
 * included). A cut passage keeps the window around its first highlight, with `…` where cut.
 */
export function markPassage(hit: HitLike, budget: number): string {
  const text = hit.content;
  const ranges = markableRanges(text, hit.highlights ?? []);
  const full = text.length + ranges.length * 2 * MARK.length;
  let from = 0;
  let to = text.length;
  if (full > budget) {
    // Room for the text once marks and ellipses are paid for (marks of ranges in the window).
    const room = Math.max(0, budget - 2 - ranges.length * 2 * MARK.length);
    const anchor = ranges[0]?.start ?? 0;
    from = safe(text, Math.max(0, Math.min(anchor - Math.floor(room / 4), text.length - room)));
    to = safe(text, Math.min(text.length, from + room));
    // Prefer word boundaries at the cuts.
    if (from > 0) {
      const space = text.indexOf(' ', from);
      if (space !== -1 && space < from + 40 && space < to) from = space + 1;
    }
    if (to < text.length) {
      const space = text.lastIndexOf(' ', to);
      if (space > from + room / 2) to = space;
    }
  }
  let out = from > 0 ? '…' : '';
  let at = from;
  for (const r of ranges) {
    // Only whole ranges: a cut one could split a code span or link it covers.
    if (r.start < from || r.end > to) continue;
    out += text.slice(at, r.start) + MARK + text.slice(r.start, r.end) + MARK;
    at = r.end;
  }
  out += text.slice(at, to);
  if (to < text.length) out += '…';
  return out;
}

/** `p. 4`, `pp. 4–5`, or '' for unpaged documents. */
export function pagesLabel(hit: Pick<HitLike, 'page' | 'pageEnd'>): string {
  if (hit.page === null) return '';
  const end = hit.pageEnd ?? hit.page;
  return end > hit.page ? `pp. ${hit.page}–${end}` : `p. ${hit.page}`;
}

function headerOf(hit: HitLike, n: number): string {
  const parts = [`[${n}] ${hit.documentName}`];
  const pages = pagesLabel(hit);
  if (pages !== '') parts.push(pages);
  if (hit.sectionPath !== '') parts.push(hit.sectionPath);
  parts.push(`score ${hit.score.toFixed(3)}`);
  return `${parts.join(' — ')}\n(documentId ${hit.documentId}, chunk ${hit.chunkIndex}; ${readAround(hit)})\n`;
}

/** How to read around a hit: read_document with its id and the pages or chunks about it. */
export function readAround(hit: HitLike): string {
  const range =
    hit.page !== null
      ? `fromPage ${hit.page}, toPage ${hit.pageEnd ?? hit.page}`
      : `fromChunk ${Math.max(0, hit.chunkIndex - 1)}, toChunk ${hit.chunkIndex + 1}`;
  return `read around it: read_document id ${hit.documentId}, ${range}`;
}

/**
 * Shares `budget` among items costing `costs` (water-filling): an item costing less than an equal
 * share gets its cost, the rest split what is left equally.
 */
export function shareBudget(costs: number[], budget: number): number[] {
  const order = costs.map((cost, i) => ({ cost, i })).sort((a, b) => a.cost - b.cost);
  const shares = new Array<number>(costs.length).fill(0);
  let left = budget;
  let count = costs.length;
  for (const { cost, i } of order) {
    const equal = Math.floor(left / count);
    shares[i] = Math.min(cost, equal);
    left -= shares[i] ?? 0;
    count--;
  }
  return shares;
}

/**
 * The hits as numbered, citable text within `maxChars` (best first): the budget is shared among
 * the hits (shareBudget); when a share is too small for a useful passage, the last hits are left
 * out and counted at the end.
 */
export function formatHits(query: string, mode: string, hits: HitLike[], maxChars: number): string {
  if (hits.length === 0) {
    return `No passage matched "${query}" (${mode}). Try other words, another mode, or a wider scope.`;
  }
  const intro = `${hits.length} passage${hits.length === 1 ? '' : 's'} for "${query}" (${mode}), best first. Cite them as [n]; read around one with read_document (its documentId and pages or chunk).\n\n`;
  const headers = hits.map((hit, i) => headerOf(hit, i + 1));
  const needs = hits.map(
    (hit) =>
      hit.content.length +
      markableRanges(hit.content, hit.highlights ?? []).length * 2 * MARK.length,
  );
  for (let shown = hits.length; shown > 0; shown--) {
    const note =
      shown < hits.length
        ? `(${hits.length - shown} more hit${hits.length - shown === 1 ? '' : 's'} not shown: raise maxChars or lower topK.)`
        : '';
    const costs = needs.slice(0, shown).map((need, i) => need + (headers[i]?.length ?? 0) + 2);
    const shares = shareBudget(costs, maxChars - intro.length - note.length);
    const budgets = shares.map((share, i) => share - (headers[i]?.length ?? 0) - 2);
    const enough = budgets.every((b, i) => b >= Math.min(needs[i] ?? 0, MIN_PASSAGE));
    if (!enough && shown > 1) continue;
    const blocks = hits
      .slice(0, shown)
      .map((hit, i) => `${headers[i] ?? ''}${markPassage(hit, Math.max(0, budgets[i] ?? 0))}`);
    return (intro + blocks.join('\n\n') + (note === '' ? '' : `\n\n${note}`)).slice(0, maxChars);
  }
  return intro.slice(0, maxChars);
}

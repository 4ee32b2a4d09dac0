/** Retrieval as the Search page asks for it: the form's fields checked, then one request. */
import { api } from './api.js';
import type { RetrieveBody, RetrieveResult } from './types.js';

export interface SearchForm {
  query: string;
  mode: 'hybrid' | 'semantic' | 'keyword';
  topK: number;
  /** '' for none (a number input's v-model gives a number once one is typed). */
  minScore: string | number;
  projectId: string;
  /** A JSON object, or '' for none. */
  filter: string;
}

/** The request body of a form, or the reason it cannot be sent. */
export function retrieveBody(form: SearchForm): RetrieveBody | { error: string } {
  const body: RetrieveBody = { query: form.query.trim(), mode: form.mode, topK: form.topK };
  if (String(form.minScore).trim() !== '') {
    const minScore = Number(form.minScore);
    if (!Number.isFinite(minScore)) return { error: 'Min score must be a number.' };
    body.minScore = minScore;
  }
  if (form.projectId !== '') body.projectId = form.projectId;
  if (form.filter.trim() !== '') {
    let filter: unknown;
    try {
      filter = JSON.parse(form.filter);
    } catch {
      return { error: 'The metadata filter is not valid JSON.' };
    }
    if (typeof filter !== 'object' || filter === null || Array.isArray(filter)) {
      return { error: 'The metadata filter must be a JSON object, e.g. {"lang": "en"}.' };
    }
    body.filter = filter as Record<string, unknown>;
  }
  return body;
}

export function retrieve(body: RetrieveBody): Promise<RetrieveResult> {
  return api<RetrieveResult>('POST', '/knowledge/retrieve', { json: body });
}

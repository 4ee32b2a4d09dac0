/**
 * The document events stream (`GET …/knowledge/events`, server-sent events). EventSource cannot
 * send an Authorization header, so the stream is read with fetch and parsed by eventsource-parser.
 * It reconnects after the delay the server asks for (`retry:`) until stopped.
 */
import { createParser } from 'eventsource-parser';
import { apiUrl, authHeaders, errorOf } from './api.js';
import { signOut } from './session.js';
import type { DocumentEvent, KnowledgeDocument } from './types.js';

const TYPES = new Set([
  'document.created',
  'document.progress',
  'document.indexed',
  'document.failed',
]);

function toEvent(type: string | undefined, data: string): DocumentEvent | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null) return null;
  if (type === 'document.deleted') {
    const id = (parsed as { id?: unknown }).id;
    return typeof id === 'string' ? { type, id } : null;
  }
  if (type !== undefined && TYPES.has(type)) {
    return { type: type as 'document.created', document: parsed as KnowledgeDocument };
  }
  return null;
}

/** Follows the events (of one project, or all); the returned function stops it. */
export function followEvents(
  onEvent: (event: DocumentEvent) => void,
  onState: (connected: boolean) => void,
  projectId?: string,
): () => void {
  const controller = new AbortController();
  let retryMs = 3000;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const connect = async (): Promise<void> => {
    try {
      const response = await fetch(apiUrl('/knowledge/events', { projectId }), {
        headers: { accept: 'text/event-stream', ...authHeaders() },
        signal: controller.signal,
      });
      if (!response.ok || response.body === null) {
        const error = await errorOf(response);
        if (response.status === 401) {
          signOut(error.message);
          return;
        }
        throw error;
      }
      onState(true);
      const parser = createParser({
        onEvent: (message) => {
          const event = toEvent(message.event, message.data);
          if (event !== null) onEvent(event);
        },
        onRetry: (ms) => {
          retryMs = ms;
        },
      });
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        parser.feed(value);
      }
    } catch {
      // Aborted, or the connection failed: reconnect below unless stopped.
    }
    onState(false);
    if (!controller.signal.aborted) {
      timer = setTimeout(() => void connect(), retryMs);
    }
  };
  void connect();
  return () => {
    clearTimeout(timer);
    controller.abort();
  };
}

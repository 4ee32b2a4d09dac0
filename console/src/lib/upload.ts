/** The upload state shared by the upload panel and the page's drop zone. */
import { reactive } from 'vue';
import { messageOf } from './api.js';
import { uploadFiles } from './documents.js';
import type { BatchResult } from './types.js';

export interface Uploader {
  indexAfter: boolean;
  busy: boolean;
  error: string | null;
  results: BatchResult['items'];
}

/** The panel's state; `upload` sends files to the project and calls `done` after. */
export function createUploader(done: () => void) {
  const state = reactive<Uploader>({ indexAfter: true, busy: false, error: null, results: [] });
  async function upload(files: readonly File[], projectId: string): Promise<void> {
    if (files.length === 0 || state.busy) return;
    state.busy = true;
    state.error = null;
    state.results = [];
    try {
      const answer = await uploadFiles(files, { projectId, index: state.indexAfter });
      state.results = answer.items;
      done();
    } catch (e) {
      state.error = messageOf(e);
    } finally {
      state.busy = false;
    }
  }
  function setIndexAfter(value: boolean): void {
    state.indexAfter = value;
  }
  return { state, upload, setIndexAfter };
}

export type UploaderHandle = ReturnType<typeof createUploader>;

/** What became of one file of a batch, in words. */
export function outcome(item: BatchResult['items'][number]): string {
  if (item.error !== undefined) return `refused: ${item.error.message}`;
  if (item.status === 200) return 'already uploaded (same content)';
  return item.document?.status === 'indexing' ? 'uploaded, indexing' : 'uploaded';
}

/** The storage keys of a document's files, chosen by the server (never by a client). */

/** Where a document's files live: everything of a document is under one prefix. */
export const documentKeys = {
  /** The folder of every document, one entry per document id. */
  root: 'documents',
  prefix: (id: string) => `documents/${id}`,
  /** The uploaded file. */
  source: (id: string, extension: string) => `documents/${id}/source.${extension}`,
  /** The converted markdown of the document's `version`. */
  markdown: (id: string, version: number) => `documents/${id}/document.v${version}.md`,
};

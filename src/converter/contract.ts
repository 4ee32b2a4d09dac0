/**
 * The contract between the server and a converter process. The converter writes `document.md`
 * (markdown; page markers `<!-- page: N -->` before each page's content for paged formats) and
 * `meta.json` (ConverterMeta) into its output directory, and exits with one of EXIT_CODES.
 *
 * The only module both halves import: the `aps-convert` program (`src/converter/`) and the server
 * that runs it (`src/knowledge/indexing/converting/`, the chunker). Keep it free of imports.
 */

/** The markdown the converter writes into its output directory. */
export const MARKDOWN_FILE = 'document.md';
/** The ConverterMeta (JSON) written next to it. */
export const META_FILE = 'meta.json';

/** Exit codes of `aps-convert`; the server turns them into error codes and plain messages. */
export const EXIT_CODES = {
  OK: 0,
  FAILED: 1,
  USAGE: 2,
  UNSUPPORTED_FORMAT: 3,
  ENCRYPTED: 4,
  CORRUPT: 5,
  NOTHING_EXTRACTABLE: 6,
  TOO_LARGE: 7,
} as const;

/** What a conversion found out (`meta.json`); the server validates it: any tool may write one. */
export interface ConverterMeta {
  converter: string;
  converterVersion: string;
  command: string;
  /** Detected input format, e.g. `html`, `csv`. */
  format: string;
  pages: number | null;
  ocrPages: number[];
  ocrMeanConfidence: number | null;
  warnings: string[];
  /** Stage name → milliseconds. */
  timings: Record<string, number>;
}

/** Name written to `meta.json` by the bundled converter. */
export const CONVERTER_NAME = 'aps-convert';

/**
 * Version of the bundled converter's output. Bump it when the markdown it produces changes, so
 * that documents indexed by an older converter can be told apart (and re-indexed) later.
 */
export const CONVERTER_VERSION = '1.1.0';

/** One of EXIT_CODES. */
export type ExitCode = (typeof EXIT_CODES)[keyof typeof EXIT_CODES];

/**
 * The label the CLI puts before the message on stderr (`aps-convert: <label>: <message>`). The
 * server strips it again (knowledge/indexing/converting/failures.ts), so both read the labels here.
 */
export const EXIT_LABELS: Record<ExitCode, string> = {
  [EXIT_CODES.OK]: 'ok',
  [EXIT_CODES.FAILED]: 'error',
  [EXIT_CODES.USAGE]: 'usage',
  [EXIT_CODES.UNSUPPORTED_FORMAT]: 'unsupported file format',
  [EXIT_CODES.ENCRYPTED]: 'encrypted',
  [EXIT_CODES.CORRUPT]: 'corrupt file',
  [EXIT_CODES.NOTHING_EXTRACTABLE]: 'nothing to extract',
  [EXIT_CODES.TOO_LARGE]: 'file too large',
};

/** Matches a page-marker line (tested without its line end). Not global: no lastIndex state. */
export const PAGE_MARKER_PATTERN = /^[ \t]*<!--[ \t]*page:[ \t]*([1-9]\d*)[ \t]*-->[ \t]*$/;

/** The marker line the converter writes before page `page` (1-based); the chunker reads it back. */
export function pageMarker(page: number): string {
  if (!Number.isSafeInteger(page) || page < 1) throw new RangeError(`invalid page: ${page}`);
  return `<!-- page: ${page} -->`;
}

/** A job sent to `aps-convert --worker` over its IPC channel (see converter/worker.ts). */
export interface WorkerJob {
  type: 'job';
  id: number;
  file: string;
  outputDir: string;
  command: string;
  lang: string;
  /**
   * Markdown of at most this many UTF-8 bytes comes back in the `done` message (`output`) and
   * nothing is written to `outputDir`; larger output is written there as by the CLI.
   */
  inlineMaxBytes: number;
}

/** A small conversion's result, sent back in the `done` message instead of files. */
export interface InlineOutput {
  markdown: string;
  meta: ConverterMeta;
}

export type WorkerMessage =
  | { type: 'ready' }
  | { type: 'progress'; id: number; done: number; total: number }
  | {
      type: 'done';
      id: number;
      code: ExitCode;
      stderr: string;
      rss: number;
      loaded: string[];
      output?: InlineOutput;
    };

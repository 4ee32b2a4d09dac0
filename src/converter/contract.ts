/**
 * The contract between the server and a converter process. The converter writes `document.md`
 * (markdown; page markers `<!-- page: N -->` before each page's content for paged formats) and
 * `meta.json` (ConverterMeta) into its output directory, and exits with one of EXIT_CODES.
 */

export const MARKDOWN_FILE = 'document.md';
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

export type ExitCode = (typeof EXIT_CODES)[keyof typeof EXIT_CODES];

/**
 * pdf.js as this process runs it, loaded once (profiled on long text PDFs: Debian manuals). Two
 * things in pdf.js's Node build cost more than the text extraction they serve:
 *
 * - The legacy build (the one for Node) bundles core-js, which on Node 20 (V8 < 12.2) judges the
 *   native `Array.prototype.push` and `JSON.parse`/`stringify` non-conforming in corners nobody
 *   here uses (a frozen array's zero-argument push, JSON source-text access) and replaces them,
 *   for the whole process, with JavaScript versions: every `push` — pdf.js's own, our layout's —
 *   became a polyfill call (~15 % of a manual's conversion). The natives are put back once both
 *   bundles (main and worker) have been evaluated; features core-js *adds* (Node 20 lacks them)
 *   stay.
 * - pdf.js inflates Flate streams through `DecompressionStream` when there is one: in Node a web
 *   stream over a zlib stream on the thread pool, per content stream, font and CMap, whose
 *   machinery costs more than the inflate, and whose round trips leave a loaded machine idle
 *   between pages. `withSyncInflate` hides it while a document is read, so pdf.js uses its own
 *   synchronous decoder (its fallback, used wherever `DecompressionStream` is missing or fails).
 */
const WORKER_MODULE = 'pdfjs-dist/legacy/build/pdf.worker.mjs';

/** Built-ins core-js may replace, with their values before pdf.js was loaded. */
const natives: { owner: object; key: string; value: unknown }[] = [
  { owner: Array.prototype, key: 'push', value: Array.prototype.push },
  { owner: JSON, key: 'parse', value: JSON.parse },
  { owner: JSON, key: 'stringify', value: JSON.stringify },
];

function isNative(value: unknown): boolean {
  return typeof value === 'function' && /\{\s*\[native code\]\s*\}$/.test(String(value));
}

/** pdf.js's API; imported here, after the natives were captured (a static import runs first). */
export const { getDocument } = await import('pdfjs-dist/legacy/build/pdf.mjs');

/**
 * pdf.js's "worker" runs in this thread in Node (a fake worker); it imports this module itself on
 * the first document unless `globalThis.pdfjsWorker` holds it. Loading it here means both bundles
 * have run their polyfills before the natives are restored.
 */
const workerModule: unknown = await import(WORKER_MODULE);
(globalThis as { pdfjsWorker?: unknown }).pdfjsWorker = workerModule;

for (const { owner, key, value } of natives) {
  // Only a native captured before pdf.js loaded is put back (if something loaded pdf.js earlier,
  // the captured value is already the polyfill, and it stays).
  if (isNative(value) && Reflect.get(owner, key) !== value) {
    Object.defineProperty(owner, key, { value, writable: true, configurable: true });
  }
}

let inflating = 0;
let decompressionStream: PropertyDescriptor | undefined;

/**
 * Runs `read` with `DecompressionStream` hidden from pdf.js (see above). Nested and concurrent
 * calls share one hiding; the global is back when the last one ends.
 */
export async function withSyncInflate<T>(read: () => Promise<T>): Promise<T> {
  if (inflating++ === 0) {
    decompressionStream = Object.getOwnPropertyDescriptor(globalThis, 'DecompressionStream');
    if (decompressionStream !== undefined)
      Reflect.deleteProperty(globalThis, 'DecompressionStream');
  }
  try {
    return await read();
  } finally {
    if (--inflating === 0 && decompressionStream !== undefined) {
      Object.defineProperty(globalThis, 'DecompressionStream', decompressionStream);
      decompressionStream = undefined;
    }
  }
}

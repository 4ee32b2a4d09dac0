/**
 * One conversion in its own process, as a converter worker runs it: `node <root>/bench/run-one.js
 * <root> <file> <command> <out.md>`, compiled by build.ts with the converter of `<root>/src` (this
 * checkout, or a `git archive` of the baseline ref), so before and after run the same way (under
 * tsx, `tsx bench/pdf/run-one.ts <source root> …` runs the sources, paying tsx's loader).
 * A fifth argument `no-outline` hides the PDF's outline (bookmarks) from the converter, so its
 * headings come from the text alone (the outline is then the truth they are scored against).
 * Prints one JSON line: conversion time (module loading excluded), pages, peak RSS.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';

const [root = '.', file = '', command = 'text', out = '', mode = ''] = process.argv.slice(2);
if (mode === 'no-outline') {
  // pdf.js does not export its document class: patch the prototype through one opened document
  // (the converter under test resolves the same pdfjs-dist module).
  const { getDocument } = await import('pdfjs-dist/legacy/build/pdf.mjs');
  const doc = await getDocument({ data: new Uint8Array(readFileSync(file)), verbosity: 0 }).promise;
  const proto = Object.getPrototypeOf(doc) as { getOutline: () => Promise<null> };
  proto.getOutline = () => Promise.resolve(null);
  await doc.destroy();
}
type ConvertFile = typeof import('../../src/converter/convert-file.js').convertFile;
const { convertFile } = (await import(resolve(root, 'src/converter/convert-file.js'))) as {
  convertFile: ConvertFile;
};
const started = performance.now();
const { markdown, meta } = await convertFile(file, {
  command: command as 'auto' | 'text' | 'ocr',
  maxInputBytes: 1 << 30,
});
const ms = performance.now() - started;
if (out !== '') writeFileSync(out, markdown);
const maxRssKb = process.resourceUsage().maxRSS;
console.log(JSON.stringify({ ms, pages: meta.pages ?? 0, maxRssKb, timings: meta.timings }));

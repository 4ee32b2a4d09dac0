/**
 * One conversion in its own process, as a converter worker runs it: `tsx bench/pdf/run-one.ts
 * <source root> <file> <command> <out.md>`. The converter is imported from `<source root>/src`
 * (this checkout, or a `git archive` of the baseline ref), so before and after run the same way.
 * Prints one JSON line: conversion time (module loading excluded), pages, peak RSS.
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';

const [root = '.', file = '', command = 'text', out = ''] = process.argv.slice(2);
type ConvertFile = typeof import('../../src/converter/convert-file.js').convertFile;
const { convertFile } = (await import(resolve(root, 'src/converter/convert-file.ts'))) as {
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

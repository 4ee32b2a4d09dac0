/**
 * Files converted one after another in one process, as a converter worker of the pool runs them:
 * `node <root>/bench/run-many.js <root> <command> <file>...`, compiled by build.ts with the
 * converter of `<root>/src` and run by plain node like `dist/converter/cli.js --worker`. Prints one
 * JSON line: the pages, the time from before the converter's import to the last file's end
 * (start-up included), the peak RSS and the process's CPU time.
 */
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';

const [root = '.', command = 'text', ...files] = process.argv.slice(2);
const started = performance.now();
type ConvertFile = typeof import('../../src/converter/convert-file.js').convertFile;
const { convertFile } = (await import(resolve(root, 'src/converter/convert-file.js'))) as {
  convertFile: ConvertFile;
};
let pages = 0;
for (const file of files) {
  const { meta } = await convertFile(file, {
    command: command as 'auto' | 'text' | 'ocr',
    maxInputBytes: 1 << 30,
  });
  pages += meta.pages ?? 0;
}
const ms = performance.now() - started;
const { maxRSS: maxRssKb, userCPUTime, systemCPUTime } = process.resourceUsage();
// CPU time of the whole process (Node's start included): what the load of the machine leaves alone.
const cpuMs = (userCPUTime + systemCPUTime) / 1000;
console.log(JSON.stringify({ ms, pages, maxRssKb, cpuMs }));

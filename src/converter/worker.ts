/**
 * `aps-convert --worker`: converts job after job for the server's converter pool
 * (knowledge/indexing/converting/worker-pool.ts), so a small file does not pay for starting Node.
 * Heavy modules (pdf.js, tesseract, office parsers) load on the first file that needs them
 * (formats/binary.ts) and stay loaded. The pool keeps the isolation of one process per run: it
 * kills this process on timeout, abort, too much memory or output, and starts another.
 *
 * Protocol: Node's IPC channel (nothing else travels on it), one JSON message each way:
 * - in:  `{type: 'job', id, file, outputDir, command, lang, inlineMaxBytes}` (absolute paths),
 *        one at a time;
 * - out: `{type: 'ready'}` once, at start;
 *        `{type: 'progress', id, done, total}` after each page of a paged format;
 *        `{type: 'done', id, code, stderr, rss, loaded, output?}`: the exit code and stderr text
 *        the CLI would have produced, the resident memory after the job, the binary formats
 *        loaded, and `output` ({markdown, meta}) when the markdown is at most `inlineMaxBytes`
 *        (then nothing is written; larger output goes to `outputDir` as the CLI writes it).
 * The worker exits when the channel closes (the server went away or let it go).
 */
import { performance } from 'node:perf_hooks';
import {
  CONVERTER_NAME,
  EXIT_CODES,
  type ExitCode,
  type InlineOutput,
  type WorkerJob,
  type WorkerMessage,
} from './contract.js';
import { COMMANDS, type CommandName } from './convert-file.js';
import { loadedBinaryFormats } from './formats/binary.js';
import { resolveLanguages } from './formats/ocr.js';
import { convertInput, exitCodeOf, finishInline, writeOutput } from './job.js';

function send(message: WorkerMessage): void {
  process.send?.(message);
}

function isJob(value: unknown): value is WorkerJob {
  const m = value as Partial<WorkerJob> | null;
  return (
    typeof m === 'object' &&
    m !== null &&
    m.type === 'job' &&
    typeof m.id === 'number' &&
    typeof m.file === 'string' &&
    typeof m.outputDir === 'string' &&
    typeof m.command === 'string' &&
    typeof m.lang === 'string' &&
    typeof m.inlineMaxBytes === 'number'
  );
}

async function runJob(job: WorkerJob): Promise<void> {
  const started = performance.now();
  const lines: string[] = [];
  const report = (label: string, message: string) => {
    lines.push(`${CONVERTER_NAME}: ${label}: ${message.replace(/\s*\n\s*/g, ' ')}`);
  };
  let code: ExitCode = EXIT_CODES.OK;
  let output: InlineOutput | undefined;
  try {
    if (!(COMMANDS as readonly string[]).includes(job.command)) {
      throw new Error(`unknown command ${job.command}`);
    }
    if (!/^[A-Za-z_]+(?:\+[A-Za-z_]+)*$/.test(job.lang)) throw new Error('invalid language');
    resolveLanguages(job.lang);
    const converted = await convertInput(
      { ...job, command: job.command as CommandName },
      {
        report,
        onProgress: (done, total) => {
          send({ type: 'progress', id: job.id, done, total });
        },
      },
    );
    const { markdown } = converted;
    // Characters never outnumber UTF-8 bytes: most outputs skip counting the bytes.
    if (markdown.length <= job.inlineMaxBytes && Buffer.byteLength(markdown) <= job.inlineMaxBytes)
      output = { markdown, meta: finishInline(converted.meta, started) };
    else await writeOutput(job.outputDir, converted, started);
  } catch (error) {
    code = exitCodeOf(error, report);
  }
  const stderr = lines.map((l) => `${l}\n`).join('');
  send({
    type: 'done',
    id: job.id,
    code,
    stderr,
    rss: process.memoryUsage.rss(),
    loaded: loadedBinaryFormats(),
    ...(output === undefined ? {} : { output }),
  });
}

/** Serves jobs until the IPC channel closes. */
export function runWorker(): void {
  if (process.send === undefined) {
    process.stderr.write(`${CONVERTER_NAME}: usage: --worker needs an IPC channel\n`);
    process.exitCode = EXIT_CODES.USAGE;
    return;
  }
  let queue = Promise.resolve();
  process.on('message', (message: unknown) => {
    if (!isJob(message)) return;
    queue = queue.then(() => runJob(message));
  });
  process.on('disconnect', () => {
    process.exit(0);
  });
  send({ type: 'ready' });
}

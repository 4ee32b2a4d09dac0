/**
 * The converter as the pool runs it, for the PDF comparison: a source root's `src/converter`
 * compiled file by file to JavaScript (TypeScript's transpiler, as `npm run build` emits each
 * file), with this checkout's runners (run-one.ts, run-many.ts) beside it, all run by plain
 * `node` as a worker runs `dist/converter/cli.js`. Run under tsx instead, every process paid
 * for tsx's loader rewriting pdf.js's 3.3 MB of modules and Node parsing their source maps:
 * 4–5 s of CPU per start on the bench machine, a cost no worker of the pool has.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The runners, compiled into `<out>/bench/`; they import `<out>/src/converter/*.js`. */
const RUNNERS = ['run-one', 'run-many'] as const;

function transpile(from: string, to: string): void {
  const { outputText } = ts.transpileModule(readFileSync(from, 'utf8'), {
    fileName: from,
    compilerOptions: {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      verbatimModuleSyntax: true,
    },
  });
  mkdirSync(dirname(to), { recursive: true });
  writeFileSync(to, outputText);
}

/**
 * Compiles `<root>/src/converter` and the runners into `out` (replacing what was there) and
 * returns `out`; `node <out>/bench/run-one.js <out> …` then converts with that root's code.
 * `out` must lie inside this checkout, so `pdfjs-dist` and the other packages resolve.
 */
export function buildConverter(root: string, out: string): string {
  rmSync(out, { recursive: true, force: true });
  const source = join(root, 'src', 'converter');
  for (const file of readdirSync(source, { recursive: true, encoding: 'utf8' })) {
    if (!file.endsWith('.ts') || file.endsWith('.d.ts')) continue;
    transpile(join(source, file), join(out, 'src', 'converter', file.replace(/\.ts$/, '.js')));
  }
  const here = dirname(fileURLToPath(import.meta.url));
  for (const runner of RUNNERS)
    transpile(join(here, `${runner}.ts`), join(out, 'bench', `${runner}.js`));
  return out;
}

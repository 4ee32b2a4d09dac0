/**
 * The Python side of the multilingual-e5-small conversion: a throwaway virtual environment with
 * convert-requirements.txt (made by python-env.ts under the per-user cache, reused by later runs
 * and CI), and this folder's conversion scripts run in it with their output kept quiet unless they
 * fail.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ensureVenv } from './python-env.js';

const run = promisify(execFile);

/** The venv's python (made on first use: about a minute, ~250 MB). */
export function conversionPython(): string {
  return ensureVenv('convert', join(import.meta.dirname, 'convert-requirements.txt'));
}

/** The last lines of a failed command's output: enough to see why, not a wall of logs. */
function tail(error: unknown): string {
  const e = error as { stderr?: string; stdout?: string; message?: string };
  const text = `${e.stdout ?? ''}\n${e.stderr ?? ''}`.trim() || (e.message ?? String(error));
  return text.split('\n').slice(-12).join('\n');
}

/** Runs one of this folder's Python scripts in the venv. */
export async function runScript(python: string, script: string, args: string[]): Promise<string> {
  try {
    const { stdout } = await run(python, [join(import.meta.dirname, script), ...args], {
      maxBuffer: 64 << 20,
    });
    return stdout;
  } catch (error) {
    throw new Error(`python ${script} failed:\n${tail(error)}`, { cause: error });
  }
}

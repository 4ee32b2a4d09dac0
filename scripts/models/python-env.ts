/**
 * Throwaway Python virtual environments for the model tooling (the reference embeddings of the
 * real-model tests, conversions), kept per user outside the checkout so that a fresh clone and CI
 * reuse them: `$XDG_CACHE_HOME/agent-platform-server/python/<name>` (else `~/.cache/…`). An
 * environment is made again when its requirements file changes (its sha256 is stamped in it).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The per-user cache of the project's tooling. */
export function toolCacheDir(): string {
  const base = process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache');
  return join(base, 'agent-platform-server');
}

function run(command: string, args: string[]): void {
  const result = spawnSync(command, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} failed (exit ${String(result.status)})`);
  }
}

/**
 * The python of the environment `name` with exactly `requirements` (a pip requirements file)
 * installed, made if missing or stale. Prints a line when it makes one.
 */
export function ensureVenv(name: string, requirements: string): string {
  const dir = join(toolCacheDir(), 'python', name);
  const python = join(dir, 'bin', 'python');
  const stamp = join(dir, 'requirements.sha256');
  const wanted = createHash('sha256').update(readFileSync(requirements)).digest('hex');
  if (existsSync(python) && existsSync(stamp) && readFileSync(stamp, 'utf8') === wanted) {
    return python;
  }
  console.error(`making the Python environment ${dir}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  run('python3', ['-m', 'venv', dir]);
  run(python, ['-m', 'pip', 'install', '--quiet', '--no-input', '-r', requirements]);
  writeFileSync(stamp, wanted);
  return python;
}

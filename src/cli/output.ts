/** What the CLI prints: tables with headers, and which database and data directory it uses. */
import { existsSync } from 'node:fs';
import { isAbsolute, relative } from 'node:path';
import type { Config } from '../config.js';

/** Columns padded to their widest cell, two spaces apart; a header row first. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) =>
    Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

/** `./data/aps.sqlite` under the working directory, the absolute path elsewhere. */
export function shownPath(path: string, cwd = process.cwd()): string {
  const rel = relative(cwd, path);
  if (rel === '') return '.';
  return rel.startsWith('..') || isAbsolute(rel) ? path : `./${rel}`;
}

/** A PostgreSQL URL without its password (and without query options that may carry one). */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    u.password = '';
    u.search = '';
    return u.toString();
  } catch {
    return 'postgres://…';
  }
}

/** `SQLite database ./data/aps.sqlite` or `PostgreSQL database postgres://aps@db:5432/aps`. */
export function describeDatabase(config: Config): string {
  return config.database.driver === 'sqlite'
    ? `SQLite database ${shownPath(config.database.filename)}`
    : `PostgreSQL database ${redactedUrl(config.database.url)}`;
}

/** The first line every command prints (on stderr, so stdout stays parseable). */
export function usingLine(config: Config): string {
  return `Using ${describeDatabase(config)} (data directory ${shownPath(config.dataDir)})`;
}

/** SQLite only: whether the database file exists (PostgreSQL is asked through its migrations). */
export function sqliteFileMissing(config: Config): boolean {
  return config.database.driver === 'sqlite' && !existsSync(config.database.filename);
}

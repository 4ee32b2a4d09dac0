/**
 * The README's tables must name every variable the config reads and every error code; the
 * architecture page must name files and folders that exist.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENV_SCHEMA } from '../../src/config.schema.js';
import { ERROR_CATALOGUE } from '../../src/errors.js';

const readme = readFileSync(resolve(import.meta.dirname, '../../README.md'), 'utf8');

describe('README', () => {
  it('documents every configuration variable', () => {
    for (const name of Object.keys(ENV_SCHEMA.properties)) {
      expect(readme).toMatch(new RegExp(`^\\|\\s*\`${name}\`\\s*\\|`, 'm'));
    }
  });
  it('documents every error code with its status', () => {
    for (const [code, { status }] of Object.entries(ERROR_CATALOGUE)) {
      expect(readme).toMatch(new RegExp(`^\\|\\s*${status}\\s*\\|\\s*\`${code}\`\\s*\\|`, 'm'));
    }
  });
});

describe('docs/architecture.md', () => {
  const root = resolve(import.meta.dirname, '../..');
  const page = readFileSync(join(root, 'docs/architecture.md'), 'utf8');
  /** Paths under `src/`, relative to it. */
  const sources = readdirSync(join(root, 'src'), { recursive: true, encoding: 'utf8' });

  it('shows a tree whose every file and folder exists', () => {
    const tree = /```\n([\s\S]*?)```/.exec(page)?.[1] ?? '';
    const stack: string[] = [];
    let named = 0;
    for (const line of tree.split('\n')) {
      const match = /^( *)(\S+)/.exec(line);
      // Continuation lines of a description are indented past the next level of the tree.
      if (match === null || (match[1] ?? '').length > 2 * stack.length + 2) continue;
      const depth = (match[1] ?? '').length / 2;
      const name = match[2] ?? '';
      stack.length = depth;
      const path = [...stack, name].join('');
      const glob = new RegExp(`^${path.replace(/[.]/g, '\\.').replace(/\*/g, '[^/]*')}$`);
      const found = name.includes('*')
        ? sources.some((f) => glob.test(`src/${f}`))
        : existsSync(join(root, path));
      expect(found, `${path} is named in the tree`).toBe(true);
      named += 1;
      if (name.endsWith('/')) stack.push(name);
    }
    expect(named).toBeGreaterThan(20);
  });

  it('cites source files that exist', () => {
    const cited = [...page.matchAll(/`([\w./-]+\/[\w.-]+\.ts)`/g)].map((m) => m[1] ?? '');
    expect(cited.length).toBeGreaterThan(5);
    for (const path of cited) {
      expect(
        sources.some((f) => `/${f}`.endsWith(`/${path}`)),
        `${path} is cited`,
      ).toBe(true);
    }
  });
});

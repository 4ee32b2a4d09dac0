/**
 * The README's tables must name every variable the config reads and every error code; the
 * architecture page must name files and folders that exist; a link between the pages must lead to
 * a file and a heading that exist.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import GithubSlugger from 'github-slugger';
import MarkdownIt from 'markdown-it';
import { describe, expect, it } from 'vitest';
import { ENV_SCHEMA } from '../../src/config.schema.js';
import { ERROR_CATALOGUE } from '../../src/errors.js';

const root = resolve(import.meta.dirname, '../..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

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

describe('links between the README and docs/', () => {
  const pages = [
    'README.md',
    'docs/architecture.md',
    'docs/development.md',
    'docs/knowledge-base.md',
    'docs/performance.md',
    'docs/ways-in.md',
  ];
  const markdown = new MarkdownIt();
  const tokensOf = (page: string) => markdown.parse(readFileSync(join(root, page), 'utf8'), {});

  /** The anchors GitHub gives a page's headings (text only, as rendered), each page read once. */
  const anchors = new Map<string, string[]>();
  function anchorsOf(page: string): string[] {
    const known = anchors.get(page);
    if (known !== undefined) return known;
    const slugger = new GithubSlugger();
    const tokens = tokensOf(page);
    const found = tokens.flatMap((token, i) => {
      const inline = tokens[i + 1];
      if (token.type !== 'heading_open' || inline === undefined) return [];
      return [slugger.slug((inline.children ?? []).map((child) => child.content).join(''))];
    });
    anchors.set(page, found);
    return found;
  }

  /** The targets of a page's links, outside links left out. */
  function linksOf(page: string): string[] {
    return tokensOf(page)
      .flatMap((token) => token.children ?? [])
      .filter((child) => child.type === 'link_open')
      .map((child) => String(child.attrGet('href') ?? ''))
      .filter((href) => !/^[a-z]+:/i.test(href));
  }

  it('lead to files and headings that exist', () => {
    let checked = 0;
    for (const page of pages) {
      for (const href of linksOf(page)) {
        const [path = '', fragment] = href.split('#');
        const target = path === '' ? page : join(dirname(page), path);
        expect(existsSync(join(root, target)), `${page} links to ${href}`).toBe(true);
        if (fragment !== undefined) {
          expect(anchorsOf(target), `${page} links to ${href}`).toContain(fragment);
        }
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThan(5);
  });
});

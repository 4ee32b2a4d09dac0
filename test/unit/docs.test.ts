/** The README's tables must name every variable the config reads and every error code. */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENV_SCHEMA } from '../../src/config.js';
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

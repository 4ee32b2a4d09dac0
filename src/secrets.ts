/**
 * Zero-config secrets: when JWT_SECRET / API_KEY_SALT are not configured (refused in production by
 * the config), strong random values are generated once and kept in `DATA_DIR/secrets.json` (mode
 * 0600) so that tokens and keys survive restarts.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from './config.js';

export interface Secrets {
  jwtSecret: string;
  apiKeySalt: string;
}

const SECRETS_FILE = 'secrets.json';

export function resolveSecrets(config: Config): Secrets {
  if (config.jwtSecret !== null && config.apiKeySalt !== null) {
    return { jwtSecret: config.jwtSecret, apiKeySalt: config.apiKeySalt };
  }
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const file = join(config.dataDir, SECRETS_FILE);
  let stored: Partial<Secrets> = {};
  if (existsSync(file)) {
    stored = JSON.parse(readFileSync(file, 'utf8')) as Partial<Secrets>;
    chmodSync(file, 0o600);
  }
  const generated: Secrets = {
    jwtSecret: stored.jwtSecret ?? randomBytes(48).toString('base64url'),
    apiKeySalt: stored.apiKeySalt ?? randomBytes(32).toString('base64url'),
  };
  if (generated.jwtSecret !== stored.jwtSecret || generated.apiKeySalt !== stored.apiKeySalt) {
    // Written to a temporary file first so a crash never leaves a half-written secrets file.
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(generated, null, 2) + '\n', { mode: 0o600 });
    renameSync(tmp, file);
  }
  return {
    jwtSecret: config.jwtSecret ?? generated.jwtSecret,
    apiKeySalt: config.apiKeySalt ?? generated.apiKeySalt,
  };
}

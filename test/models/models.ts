/**
 * Where the real-model suites find the installed models: `models/` at the repository root (what
 * `npm run models:install` fills), or APS_MODELS_DIR. A missing model fails the suite, naming the
 * command that installs it: `npm run test:models` runs after the install, never instead of it.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const MODELS_DIR = resolve(
  process.env.APS_MODELS_DIR ?? join(import.meta.dirname, '../../models'),
);

/** The installed model's folder; throws when it is not installed. */
export function installedModel(name: string): string {
  const dir = join(MODELS_DIR, name);
  if (!existsSync(join(dir, 'aps-model.json')) && !existsSync(join(dir, 'config.json'))) {
    throw new Error(`${dir} is not installed: run \`npm run models:install -- ${name}\``);
  }
  return dir;
}

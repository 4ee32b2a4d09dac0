/**
 * The built-in web console: the static assets Vite builds from `console/` into `dist/console/`,
 * served at `/console/` (no auth: the console signs in and calls the API with a JWT), `/`
 * redirecting there, and `/console/config.json` telling the console the API prefix. Every answer
 * of this scope carries a strict Content-Security-Policy: scripts, styles and connections from
 * this origin only, no inline script or style, no eval, never framed.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync } from 'fastify';
import { AppError } from '../errors.js';

export const CONSOLE_PATH = '/console/';

/** The console's CSP: nothing inline, nothing from elsewhere, no framing. */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
};

/**
 * Where the built console is: `dist/console/` beside the compiled server (`dist/http/` → `../console`),
 * or, when the server runs from its TypeScript sources (tests), the build's `dist/console/`.
 * Null when it was never built.
 */
export function consoleRoot(): string | null {
  const candidates = [
    resolve(import.meta.dirname, '../console'),
    resolve(import.meta.dirname, '../../dist/console'),
  ];
  return candidates.find((dir) => existsSync(resolve(dir, 'index.html'))) ?? null;
}

interface ConsoleOptions {
  apiPrefix: string;
  /** The built assets (see consoleRoot); null: `/console/` says how to build them. */
  root: string | null;
}

export const consoleRoutes: FastifyPluginAsync<ConsoleOptions> = async (app, options) => {
  app.addHook('onSend', async (_request, reply) => {
    void reply.headers(SECURITY_HEADERS);
  });
  const hidden = { schema: { hide: true } };

  app.get('/', hidden, (_request, reply) => reply.redirect(CONSOLE_PATH, 302));
  app.get('/console', hidden, (_request, reply) => reply.redirect(CONSOLE_PATH, 301));
  app.get(`${CONSOLE_PATH}config.json`, hidden, (_request, reply) =>
    reply.header('cache-control', 'no-cache').send({ apiPrefix: options.apiPrefix }),
  );

  if (options.root === null) {
    const notBuilt = () => {
      throw new AppError(
        'ROUTE_NOT_FOUND',
        'The console is not built: run `npm run build` (it builds the server and the console).',
      );
    };
    app.get(`${CONSOLE_PATH}*`, hidden, notBuilt);
    return;
  }
  await app.register(fastifyStatic, {
    root: options.root,
    prefix: CONSOLE_PATH,
    // The `reply.sendFile` decorator belongs to the docs UI's copy of the plugin.
    decorateReply: false,
    index: ['index.html'],
    // Hashed file names under assets/ never change; index.html must be checked on every load.
    cacheControl: false,
    setHeaders: (reply, path) => {
      void reply.header(
        'cache-control',
        path.includes('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache',
      );
    },
  });
};

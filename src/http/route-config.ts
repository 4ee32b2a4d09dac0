/**
 * Per-route declarations the API scope enforces: who may call it and whether it changes state
 * (enforced by auth/auth.guard.ts).
 */
import type { AgentLevel } from '../db/schema.js';

type RouteAccess = 'public' | AgentLevel;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Minimum agent level, or `public` for routes that need no credentials. */
    access?: RouteAccess;
    /** Whether the route changes state; such routes answer 503 in read-only mode. */
    mutates?: boolean;
    /**
     * A long-lived response (an event stream): admitted like any request, but it does not hold a
     * load-shedding slot while it stays open (the route caps its own streams).
     */
    stream?: boolean;
    /** Needs a key with `admin` access (keys, audit); otherwise `write` if it mutates, else `read`. */
    admin?: boolean;
    /** Its `:id` is a document's: a key restricted to projects reaches only theirs (else 404). */
    document?: boolean;
    /**
     * Acts on every project unless the request names one (re-index): a key restricted to projects
     * must name one of its own.
     */
    everyProject?: boolean;
  }
}

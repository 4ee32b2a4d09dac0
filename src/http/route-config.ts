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
  }
}

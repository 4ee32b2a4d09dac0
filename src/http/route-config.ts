/** Per-route declarations the API scope enforces: who may call it and whether it changes state. */
import type { Principal } from '../auth/api-key.service.js';
import type { AgentLevel } from '../db/schema.js';

export type RouteAccess = 'public' | AgentLevel;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Minimum agent level, or `public` for routes that need no credentials. */
    access?: RouteAccess;
    /** Whether the route changes state; such routes answer 503 in read-only mode. */
    mutates?: boolean;
  }
  interface FastifyRequest {
    /** Set by the API scope's guard on authenticated routes. */
    principal: Principal | null;
  }
}

/** The audit actor for a request. */
export function actorOf(principal: Principal | null): string {
  return principal === null ? 'anonymous' : `api_key:${principal.apiKeyId}`;
}

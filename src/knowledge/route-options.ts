/** What every Knowledge route shares: its access (all L0), its OpenAPI tag and error answers. */
import { AUTHENTICATED_ERRORS, errorResponses } from '../http/schemas.js';

/** A route that reads. */
export const READ = { access: 'L0', mutates: false } as const;
/** A route that changes state (refused in read-only mode). */
export const WRITE = { access: 'L0', mutates: true } as const;
/** A route whose `:id` is a document: a key restricted to projects reaches only theirs. */
export const READ_DOCUMENT = { ...READ, document: true } as const;
export const WRITE_DOCUMENT = { ...WRITE, document: true } as const;

/** The projects a request's key reaches (null: every project): lists and searches narrow to them. */
export const projectsOf = (request: { principal: { projects: readonly string[] | null } | null }) =>
  request.principal?.projects ?? null;
export const tags = ['knowledge'];
/** The error answers of an authenticated route, plus the route's own statuses. */
export const errors = (...extra: number[]) => errorResponses(...AUTHENTICATED_ERRORS, ...extra);

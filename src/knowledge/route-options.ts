/** What every Knowledge route shares: its access (all L0), its OpenAPI tag and error answers. */
import { AUTHENTICATED_ERRORS, errorResponses } from '../http/schemas.js';

/** A route that reads. */
export const READ = { access: 'L0', mutates: false } as const;
/** A route that changes state (refused in read-only mode). */
export const WRITE = { access: 'L0', mutates: true } as const;
export const tags = ['knowledge'];
/** The error answers of an authenticated route, plus the route's own statuses. */
export const errors = (...extra: number[]) => errorResponses(...AUTHENTICATED_ERRORS, ...extra);

/** Schemas shared by every route: the error body and the response sets that use it. */
import { Type } from 'typebox';

export const ErrorBodySchema = Type.Object(
  {
    statusCode: Type.Integer({ description: 'HTTP status, repeated in the body.' }),
    code: Type.String({ description: 'Stable machine-readable code from the error catalogue.' }),
    message: Type.String({ description: 'Human-readable explanation.' }),
  },
  { description: 'Every error response has this body.' },
);

/** Response entries for the given error statuses, for the OpenAPI document. */
export function errorResponses(...statuses: number[]): Record<number, typeof ErrorBodySchema> {
  return Object.fromEntries(statuses.map((s) => [s, ErrorBodySchema]));
}

/** Errors any authenticated route can answer with. */
export const AUTHENTICATED_ERRORS = [400, 401, 403, 429, 500] as const;

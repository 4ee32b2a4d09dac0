/** Schemas shared by every route: the error body and the response sets that use it. */
import { STATUS_CODES } from 'node:http';
import { Type, type TSchema } from 'typebox';
import { ERROR_CATALOGUE } from '../errors.js';

export const ErrorBodySchema = Type.Object(
  {
    statusCode: Type.Integer({ description: 'HTTP status, repeated in the body.' }),
    code: Type.String({ description: 'Stable machine-readable code from the error catalogue.' }),
    message: Type.String({ description: 'Human-readable explanation.' }),
  },
  { description: 'Every error response has this body.' },
);

const errorTable = Object.entries(ERROR_CATALOGUE)
  .map(([code, { status, message }]) => `| ${status} | \`${code}\` | ${message} |`)
  .join('\n');

/**
 * The error body as the OpenAPI document's `ErrorBody` component: `code` lists every code, and
 * the description holds the table of codes (shown with the schemas, at the end of /docs).
 */
export const ErrorBodyDocument = Type.Object(
  {
    ...ErrorBodySchema.properties,
    code: Type.String({
      enum: Object.keys(ERROR_CATALOGUE),
      description: 'Stable machine-readable code from the error catalogue.',
    }),
  },
  {
    description: `Every error response has this body. The codes:\n\n| status | code | meaning |\n|---|---|---|\n${errorTable}`,
  },
);

/** A response schema with the description the OpenAPI document shows for that response. */
export function described<T extends TSchema>(description: string, schema: T): T {
  return { ...schema, description };
}

/** Response entries for the given error statuses, for the OpenAPI document. */
export function errorResponses(...statuses: number[]): Record<number, typeof ErrorBodySchema> {
  return Object.fromEntries(
    statuses.map((s) => [
      s,
      described(
        `${STATUS_CODES[s] ?? 'Error'}: an error body; its codes are listed under ErrorBody.`,
        ErrorBodySchema,
      ),
    ]),
  );
}

/** Errors any authenticated route can answer with. */
export const AUTHENTICATED_ERRORS = [400, 401, 403, 429, 500] as const;

/** Request and response schemas of the auth routes: validation, types and OpenAPI in one place. */
import { Type } from 'typebox';

const LevelSchema = Type.Union([Type.Literal('L0'), Type.Literal('L1'), Type.Literal('L2')], {
  description: 'Agent level: L0 executive > L1 manager > L2 worker.',
});

const AccessSchema = Type.Union(
  [Type.Literal('read'), Type.Literal('write'), Type.Literal('admin')],
  {
    description:
      'What the key may do: `read` (retrieve, list, get, chunks, markdown, projects, events), `write` (also upload, ingest, index, patch, delete), `admin` (also API keys and the audit trail).',
  },
);

export const TokenRequestSchema = Type.Object(
  {
    apiKey: Type.String({ minLength: 1, maxLength: 512, description: 'A raw API key.' }),
    agentId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description: 'Becomes the JWT subject; default: the key id.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const TokenResponseSchema = Type.Object({
  token: Type.String({ description: 'A JWT (HS256) to send as `Authorization: Bearer <token>`.' }),
  tokenType: Type.Literal('Bearer'),
  apiKeyId: Type.String(),
  level: LevelSchema,
  expiresAt: Type.String({ format: 'date-time' }),
});

export const ApiKeyRecordSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  level: LevelSchema,
  prefix: Type.String({ description: 'First characters of the key, for recognising it.' }),
  lastFour: Type.String({ description: 'Last four characters of the key.' }),
  origin: Type.String({ description: '`api`, `cli`, `bootstrap`, `first-start` or `rotation`.' }),
  createdAt: Type.String({ format: 'date-time' }),
  lastUsedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  revokedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  replacedBy: Type.Union([Type.String(), Type.Null()], {
    description: 'Successor of a rotated key.',
  }),
  projects: Type.Union([Type.Array(Type.String()), Type.Null()], {
    description: 'The projects the key sees and touches; null: every project.',
  }),
  access: AccessSchema,
});

export const CreatedApiKeySchema = Type.Intersect([
  ApiKeyRecordSchema,
  Type.Object({ apiKey: Type.String({ description: 'The raw key. Shown once; store it now.' }) }),
]);

export const CreateApiKeySchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    level: LevelSchema,
    projects: Type.Optional(
      Type.Union(
        [
          Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
            minItems: 1,
            maxItems: 100,
          }),
          Type.Null(),
        ],
        { description: 'Restrict the key to these projects; absent or null: every project.' },
      ),
    ),
    access: Type.Optional({ ...AccessSchema, description: 'Default `admin` (no restriction).' }),
  },
  { additionalProperties: false },
);

export const KeyIdSchema = Type.Object(
  { id: Type.String({ minLength: 1, maxLength: 100 }) },
  { additionalProperties: false },
);

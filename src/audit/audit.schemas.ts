/** GET /audit: its query and answer. */
import { Type } from 'typebox';

export const AuditQuerySchema = Type.Object(
  {
    action: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description: 'Only this action, e.g. `document.delete`, `api_key.create`.',
      }),
    ),
    keyId: Type.Optional(
      Type.String({ minLength: 1, maxLength: 100, description: 'Only this key.' }),
    ),
    target: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description: 'Only entries about this (a document or key id).',
      }),
    ),
    from: Type.Optional(
      Type.String({ format: 'date-time', description: 'At or after this time.' }),
    ),
    to: Type.Optional(Type.String({ format: 'date-time', description: 'Before this time.' })),
    limit: Type.Integer({ minimum: 1, maximum: 500, default: 50 }),
    cursor: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 500,
        description: 'The previous page’s `nextCursor`.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const AuditItemSchema = Type.Object({
  at: Type.String({ format: 'date-time' }),
  action: Type.String({
    description:
      '`api_key.create|revoke|rotate|bootstrap`, `document.create|update|index|delete`, `documents.reindex`, `access.refused`.',
  }),
  keyId: Type.Union([Type.String(), Type.Null()], {
    description: 'The key that acted (null: the CLI or the server).',
  }),
  keyName: Type.Union([Type.String(), Type.Null()], { description: 'Its name at the time.' }),
  actor: Type.String({ description: '`api_key:<id>`, `cli`, `system` or `anonymous`.' }),
  target: Type.String({ description: 'What it was about: a document or key id, or a route.' }),
  requestId: Type.Union([Type.String(), Type.Null()]),
  detail: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
});

export const AuditPageSchema = Type.Object({
  items: Type.Array(AuditItemSchema),
  nextCursor: Type.Union([Type.String(), Type.Null()]),
});

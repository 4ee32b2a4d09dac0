/** Token issuance and the API-key lifecycle. Thin: schema → service → response. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { AppError } from '../errors.js';
import { AUTHENTICATED_ERRORS, described, errorResponses } from '../http/schemas.js';
import type { ApiKeyService } from './api-key.service.js';
import { requestActor } from '../audit/actor.js';
import {
  ApiKeyRecordSchema,
  CreateApiKeySchema,
  CreatedApiKeySchema,
  KeyIdSchema,
  TokenRequestSchema,
  TokenResponseSchema,
} from './auth.schemas.js';
import type { TokenService } from './token.service.js';

interface AuthRoutesDeps {
  apiKeys: ApiKeyService;
  tokens: TokenService;
  tokenRateLimitPerMinute: number;
}

const L0_MUTATION = { access: 'L0', mutates: true, admin: true } as const;

export const authRoutes: FastifyPluginAsyncTypebox<AuthRoutesDeps> = async (app, deps) => {
  app.post(
    '/auth/token',
    {
      config: {
        access: 'public',
        mutates: false,
        rateLimit: { max: deps.tokenRateLimitPerMinute, timeWindow: 60_000 },
      },
      schema: {
        summary: 'Exchange an API key for a short-lived JWT',
        tags: ['auth'],
        security: [],
        body: TokenRequestSchema,
        response: {
          200: described('The token and when it expires.', TokenResponseSchema),
          ...errorResponses(400, 401, 429, 500),
        },
      },
    },
    (request) => deps.tokens.issue(request.body.apiKey, request.body.agentId),
  );

  app.post(
    '/auth/token/refresh',
    {
      config: {
        access: 'L2',
        mutates: false,
        rateLimit: { max: deps.tokenRateLimitPerMinute, timeWindow: 60_000 },
      },
      schema: {
        summary: 'A fresh JWT for the caller (same key, subject and level), without the API key',
        tags: ['auth'],
        response: {
          200: described('The new token and when it expires.', TokenResponseSchema),
          ...errorResponses(...AUTHENTICATED_ERRORS),
        },
      },
    },
    (request) => {
      if (request.principal === null) throw new AppError('AUTH_UNAUTHORIZED');
      return deps.tokens.refresh(request.principal);
    },
  );

  app.get(
    '/auth/api-keys',
    {
      config: { access: 'L0', mutates: false, admin: true },
      schema: {
        summary: 'List API keys (never their secrets)',
        tags: ['auth'],
        response: {
          200: Type.Object(
            { items: Type.Array(ApiKeyRecordSchema) },
            { description: 'Every API key, revoked ones included.' },
          ),
          ...errorResponses(...AUTHENTICATED_ERRORS),
        },
      },
    },
    async (request) => ({ items: await deps.apiKeys.list(request.principal?.projects ?? null) }),
  );

  app.post(
    '/auth/api-keys/create',
    {
      config: L0_MUTATION,
      schema: {
        summary: 'Create an API key; the raw key is in the response, once',
        tags: ['auth'],
        body: CreateApiKeySchema,
        response: {
          201: described(
            'The new key, with its raw secret (shown this once).',
            CreatedApiKeySchema,
          ),
          ...errorResponses(...AUTHENTICATED_ERRORS, 503),
        },
      },
    },
    async (request, reply) => {
      const { record, rawKey } = await deps.apiKeys.create({
        ...request.body,
        actor: requestActor(request),
        origin: 'api',
        scope: request.principal?.projects ?? null,
      });
      return reply.status(201).send({ ...record, apiKey: rawKey });
    },
  );

  app.post(
    '/auth/api-keys/revoke',
    {
      config: L0_MUTATION,
      schema: {
        summary: 'Revoke an API key (idempotent); its JWTs stop working at once',
        tags: ['auth'],
        body: KeyIdSchema,
        response: {
          200: described('The revoked key.', ApiKeyRecordSchema),
          ...errorResponses(...AUTHENTICATED_ERRORS, 404, 409, 503),
        },
      },
    },
    (request) =>
      deps.apiKeys.revoke(
        request.body.id,
        requestActor(request),
        request.principal?.projects ?? null,
      ),
  );

  app.post(
    '/auth/api-keys/rotate',
    {
      config: L0_MUTATION,
      schema: {
        summary: 'Replace an API key by a new one with the same name and level',
        tags: ['auth'],
        body: KeyIdSchema,
        response: {
          201: Type.Intersect([CreatedApiKeySchema, Type.Object({ rotatedFrom: Type.String() })], {
            description:
              'The new key, with its raw secret (shown this once); the old one is revoked.',
          }),
          ...errorResponses(...AUTHENTICATED_ERRORS, 404, 409, 503),
        },
      },
    },
    async (request, reply) => {
      const { record, rawKey, rotatedFrom } = await deps.apiKeys.rotate(
        request.body.id,
        requestActor(request),
        request.principal?.projects ?? null,
      );
      return reply.status(201).send({ ...record, apiKey: rawKey, rotatedFrom });
    },
  );
};

/**
 * Request validation with Fastify's own Ajv compiler (@fastify/ajv-compiler), configured per
 * request part. A JSON body is validated as sent: `{"query": 123}` is a number, not the string
 * "123". Query strings, path parameters and headers are text on the wire, so their values are
 * coerced to the schema's types (`?limit=5` is the integer 5). Both fill in schema defaults.
 */
import AjvCompiler from '@fastify/ajv-compiler';
import type { FastifySchemaCompiler, FastifyServerOptions } from 'fastify';

const fastifyCompilers = AjvCompiler();

/** Options of the text parts; the body gets the same without coercion. */
const AJV = {
  customOptions: { coerceTypes: 'array', useDefaults: true, removeAdditional: false },
} as const;

type Compiler = FastifySchemaCompiler<unknown>;
// JSON Type Definition mode is not used here: JSON Schema only.
type AjvOptions = Exclude<NonNullable<FastifyServerOptions['ajv']>, { mode: 'JTD' }>;

/**
 * Fastify calls it once per encapsulation context with the shared schemas (`addSchema`) and the
 * server's `ajv` option; the compiler it returns gets each route's schema with its request part.
 */
function buildValidator(
  externalSchemas: Parameters<typeof fastifyCompilers>[0],
  ajv: AjvOptions = AJV,
): Compiler {
  // The package's types describe the returned compiler as taking a bare schema; Fastify (and the
  // package) call it with the route definition, as FastifySchemaCompiler says.
  const build = (options: AjvOptions) =>
    fastifyCompilers(externalSchemas, options) as unknown as Compiler;
  const coercing = build(ajv);
  const strict = build({ ...ajv, customOptions: { ...ajv.customOptions, coerceTypes: false } });
  return (route) => (route.httpPart === 'body' ? strict : coercing)(route);
}

/** The validation part of the Fastify server options. */
export const validationOptions = {
  ajv: AJV,
  schemaController: {
    compilersFactory: { buildValidator: buildValidator as unknown as AjvCompiler.ValidatorFactory },
  },
} satisfies FastifyServerOptions;

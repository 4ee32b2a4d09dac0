/**
 * Request validation with Fastify's own Ajv compiler (@fastify/ajv-compiler), configured per
 * request part. A JSON body is validated as sent: `{"query": 123}` is a number, not the string
 * "123". Query strings, path parameters and headers are text on the wire, so their values are
 * coerced to the schema's types (`?limit=5` is the integer 5). Both fill in schema defaults.
 */
import AjvCompiler from '@fastify/ajv-compiler';
import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import type { FastifySchemaCompiler, FastifyServerOptions } from 'fastify';
import type { LazySchemas, Serialize } from './lazy-schemas.js';

const fastifyCompilers = AjvCompiler();
const fastifySerializers = SerializerSelector();

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
 * Each route's validator is compiled at its first use (`schemas`).
 */
function validatorFactory(schemas: LazySchemas) {
  return (externalSchemas: Parameters<typeof fastifyCompilers>[0], ajv: AjvOptions = AJV) => {
    // The package's types describe the returned compiler as taking a bare schema; Fastify (and
    // the package) call it with the route definition, as FastifySchemaCompiler says.
    const build = (options: AjvOptions) =>
      fastifyCompilers(externalSchemas, options) as unknown as Compiler;
    const coercing = build(ajv);
    const strict = build({ ...ajv, customOptions: { ...ajv.customOptions, coerceTypes: false } });
    const compiler: Compiler = (route) =>
      schemas.validator(() =>
        (route.httpPart === 'body' ? strict : coercing)(route),
      ) as unknown as ReturnType<Compiler>;
    return compiler;
  };
}

/** Fastify's own fast-json-stringify serialisers, each compiled at its first use. */
function serializerFactory(schemas: LazySchemas): SerializerSelector.SerializerFactory {
  return (externalSchemas, options) => {
    const compile = fastifySerializers(externalSchemas, options);
    return (route) => schemas.serializer(() => compile(route) as Serialize);
  };
}

/** The validation and serialisation part of the Fastify server options. */
export function validationOptions(schemas: LazySchemas) {
  return {
    ajv: AJV,
    schemaController: {
      compilersFactory: {
        buildValidator: validatorFactory(schemas) as unknown as AjvCompiler.ValidatorFactory,
        buildSerializer: serializerFactory(schemas),
      },
    },
  } satisfies FastifyServerOptions;
}

/**
 * Route schemas compiled at their first use instead of before `listen`, so that a restart is
 * listening sooner (docs/performance.md). Compiling every route's Ajv validators and
 * fast-json-stringify serialisers took about a third of the start-up's CPU; these wrappers defer
 * each compilation until the route first validates or serialises, and `compileAll` (run when the
 * server listens) compiles the rest in short slices with the event loop free in between, so a
 * schema that does not compile is still reported at start-up, just after the socket opens. Each
 * wrapper compiles once.
 */

/** An Ajv validate function as Fastify calls it (`schemaEnv` tells it to pass the parent). */
export interface Validate {
  (data: unknown, context?: unknown): unknown;
  errors?: unknown;
  schemaEnv?: unknown;
}
export type Serialize = (data: unknown) => string;

/** One app's deferred compilations. */
export class LazySchemas {
  /** Compilations not done yet: each compiles its wrapper's function. */
  private readonly pending = new Set<() => unknown>();

  private once<T>(compile: () => T): () => T {
    let compiled: T | undefined;
    const get = (): T => {
      if (compiled === undefined) {
        // Out first: a schema that throws is not retried by compileAll (its route throws).
        this.pending.delete(get);
        compiled = compile();
      }
      return compiled;
    };
    this.pending.add(get);
    return get;
  }

  /** A validate function that compiles `compile()`'s at its first call or property read. */
  validator(compile: () => Validate): Validate {
    const real = this.once(compile);
    const validate = ((data: unknown, context?: unknown) => real()(data, context)) as Validate;
    // Fastify reads `schemaEnv` before the call and `errors` after a failed one.
    Object.defineProperties(validate, {
      errors: { get: () => real().errors },
      schemaEnv: { get: () => real().schemaEnv },
    });
    return validate;
  }

  /** A serialise function that compiles `compile()`'s at its first call. */
  serializer(compile: () => Serialize): Serialize {
    const real = this.once(compile);
    return (data) => real()(data);
  }

  /** How many compilations are still pending. */
  get size(): number {
    return this.pending.size;
  }

  /**
   * Compiles every pending schema, `sliceMs` at a time with the event loop free in between.
   * Rejects with the first schema that fails to compile (the others are still compiled).
   */
  async compileAll(sliceMs = 10): Promise<void> {
    let failure: Error | undefined;
    while (this.pending.size > 0) {
      const until = performance.now() + sliceMs;
      for (const compile of this.pending) {
        try {
          compile();
        } catch (error) {
          failure ??= error instanceof Error ? error : new Error(String(error));
        }
        if (performance.now() >= until) break;
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (failure !== undefined) throw failure;
  }

  /** Forgets what is pending (the app closed). */
  clear(): void {
    this.pending.clear();
  }
}

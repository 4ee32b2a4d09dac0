/** Route schemas compile at first use, and every one of the real app's compiles. */
import { describe, expect, it } from 'vitest';
import { compileRouteSchemas } from '../../src/app.js';
import { LazySchemas, type Validate } from '../../src/http/lazy-schemas.js';
import { bearer, createTestApp } from '../helpers.js';

function fakeValidate(): Validate {
  const validate: Validate = (data) => {
    validate.errors = data === 1 ? null : [{ message: 'not 1' }];
    return data === 1;
  };
  validate.schemaEnv = { root: true };
  return validate;
}

describe('LazySchemas', () => {
  it('compiles a validator once, at its first call, and forwards errors and schemaEnv', () => {
    const schemas = new LazySchemas();
    let compiled = 0;
    const validate = schemas.validator(() => {
      compiled++;
      return fakeValidate();
    });
    expect(compiled).toBe(0);
    expect(schemas.size).toBe(1);
    expect(validate(2)).toBe(false);
    expect(validate.errors).toEqual([{ message: 'not 1' }]);
    expect(validate(1)).toBe(true);
    expect(validate.errors).toBeNull();
    expect(validate.schemaEnv).toEqual({ root: true });
    expect(compiled).toBe(1);
    expect(schemas.size).toBe(0);
  });

  it('compileAll compiles what is pending in slices, and rejects with a schema that throws', async () => {
    const schemas = new LazySchemas();
    const done: number[] = [];
    const serializers = [1, 2, 3].map((n) =>
      schemas.serializer(() => {
        done.push(n);
        return (data) => `${n}:${JSON.stringify(data)}`;
      }),
    );
    schemas.serializer(() => {
      throw new Error('bad schema');
    });
    expect(serializers[1]?.({ a: 1 })).toBe('2:{"a":1}');
    await expect(schemas.compileAll(0)).rejects.toThrow('bad schema');
    expect(done.sort()).toEqual([1, 2, 3]);
    expect(schemas.size).toBe(0);
    expect(serializers[0]?.('x')).toBe('1:"x"');
  });
});

describe('the app', () => {
  it('validates and serialises before its schemas are compiled, and every route schema compiles', async () => {
    const t = await createTestApp();
    try {
      const bad = await t.app.inject({
        method: 'POST',
        url: `${t.prefix}/knowledge/retrieve`,
        headers: { ...bearer(t.key), 'content-type': 'application/json' },
        payload: JSON.stringify({ query: 123 }),
      });
      expect(bad.statusCode).toBe(400);
      expect(bad.json()).toMatchObject({ code: 'VALIDATION_ERROR' });
      const list = await t.app.inject({
        method: 'GET',
        url: `${t.prefix}/knowledge/projects?limit=5`,
        headers: bearer(t.key),
      });
      expect(list.statusCode).toBe(200);
      await expect(compileRouteSchemas(t.app)).resolves.toBeUndefined();
    } finally {
      await t.close();
    }
  });
});

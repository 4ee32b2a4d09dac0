/** The OpenAPI document: complete enough for /docs and client generators. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { convertibleFormats } from '../../src/converter/formats/detect.js';
import { ERROR_CATALOGUE } from '../../src/errors.js';
import { bearer, createTestApp, type TestApp } from '../helpers.js';
import { multipart } from '../knowledge/helpers.js';

type Schema = {
  type?: string;
  format?: string;
  required?: string[];
  properties?: Record<string, Schema>;
  default?: unknown;
  enum?: unknown[];
  description?: string;
  nullable?: boolean;
};
type Operation = {
  parameters?: { in: string; name: string; required?: boolean; schema?: Schema }[];
  requestBody?: { required?: boolean; content: Record<string, { schema: Schema }> };
  responses: Record<string, { description: string }>;
};
type Document = {
  info: { description: string };
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
};

let t: TestApp;
let doc: Document;
beforeAll(async () => {
  t = await createTestApp();
  doc = (await t.app.inject({ method: 'GET', url: '/docs/json' })).json<Document>();
});
afterAll(async () => {
  await t.close();
});

const operations = () =>
  Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({ path, method, op })),
  );
const op = (method: string, path: string): Operation => {
  const found = doc.paths[path.startsWith('/health') ? path : `${t.prefix}${path}`]?.[method];
  if (found === undefined) throw new Error(`no ${method} ${path} in the document`);
  return found;
};

describe('OpenAPI document', () => {
  it('is the same at /docs/json and {prefix}/openapi.json', async () => {
    const api = await t.app.inject({ method: 'GET', url: `${t.prefix}/openapi.json` });
    expect(api.json()).toEqual(doc);
  });

  it('describes the upload form: a binary file plus projectId and source', async () => {
    const body = op('post', '/knowledge/documents/upload').requestBody;
    expect(Object.keys(body?.content ?? {})).toEqual(['multipart/form-data']);
    const form = body!.content['multipart/form-data']!.schema;
    expect(form.properties?.file).toMatchObject({ type: 'string', format: 'binary' });
    expect(form.properties?.projectId).toMatchObject({ type: 'string' });
    expect(form.properties?.source).toMatchObject({ type: 'string', default: 'upload' });
    expect(form.required).toEqual(['file']);
    // Documenting the form does not validate it: a real upload still goes through.
    const upload = multipart([
      { name: 'file', filename: 'notes.txt', content: 'owls hunt at night' },
      { name: 'projectId', value: 'birds' },
    ]);
    const res = await t.app.inject({
      method: 'POST',
      url: `${t.prefix}/knowledge/documents/upload`,
      headers: { ...bearer(t.key), ...upload.headers },
      payload: upload.payload,
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ projectId: 'birds', source: 'upload' });
  });

  it('every response has a real description', () => {
    for (const { path, method, op } of operations()) {
      for (const [status, response] of Object.entries(op.responses)) {
        expect(response.description, `${method} ${path} ${status}`).not.toBe('Default Response');
        expect(response.description.length, `${method} ${path} ${status}`).toBeGreaterThan(3);
      }
    }
  });

  it('success responses carry the status codes the routes answer with', () => {
    const success = (o: Operation) => Object.keys(o.responses).filter((s) => s.startsWith('2'));
    const expected: [string, string, string[]][] = [
      ['get', '/health', ['200']],
      ['post', '/auth/token', ['200']],
      ['get', '/auth/api-keys', ['200']],
      ['post', '/auth/api-keys/create', ['201']],
      ['post', '/auth/api-keys/revoke', ['200']],
      ['post', '/auth/api-keys/rotate', ['201']],
      ['get', '/knowledge/commands', ['200']],
      ['get', '/knowledge/converter/status', ['200']],
      ['get', '/knowledge/status', ['200']],
      ['get', '/knowledge/documents', ['200']],
      ['get', '/knowledge/documents/{id}', ['200']],
      ['get', '/knowledge/documents/{id}/chunks', ['200']],
      ['delete', '/knowledge/documents/{id}', ['200']],
      ['post', '/knowledge/documents/upload', ['200', '201']],
      ['post', '/knowledge/documents/{id}/index', ['201', '202']],
      ['post', '/knowledge/retrieve', ['200']],
      ['get', '/knowledge/documents/{id}/markdown', ['200']],
      ['post', '/mcp', ['200', '202']],
    ];
    for (const [method, path, codes] of expected) {
      expect(success(op(method, path)), `${method} ${path}`).toEqual(codes);
    }
    for (const { path, method, op } of operations()) {
      expect(success(op).length, `${method} ${path}`).toBeGreaterThan(0);
    }
  });

  it('fields with defaults are not required', () => {
    const check = (schema: Schema | undefined, where: string) => {
      for (const [name, property] of Object.entries(schema?.properties ?? {})) {
        if (property.default !== undefined) {
          expect(schema?.required ?? [], `${where}.${name}`).not.toContain(name);
        }
        check(property, `${where}.${name}`);
      }
    };
    for (const { path, method, op } of operations()) {
      for (const parameter of op.parameters ?? []) {
        if (parameter.schema?.default !== undefined) {
          expect(parameter.required, `${method} ${path} ${parameter.name}`).toBe(false);
        }
      }
      for (const media of Object.values(op.requestBody?.content ?? {})) {
        check(media.schema, `${method} ${path}`);
      }
    }
    const retrieve = op('post', '/knowledge/retrieve').requestBody!.content['application/json']!;
    expect(retrieve.schema.required).toEqual(['query']);
    const limit = op('get', '/knowledge/documents').parameters?.find((p) => p.name === 'limit');
    expect(limit).toMatchObject({ required: false, schema: { default: 100 } });
    // The index body may be left out altogether.
    expect(op('post', '/knowledge/documents/{id}/index').requestBody?.required).toBe(false);
  });

  it('index settings accept any overlap the reference console sends', () => {
    const body = op('post', '/knowledge/documents/{id}/index').requestBody!;
    const overlap = body.content['application/json']!.schema.properties!.overlapChars as Schema & {
      minimum: number;
      maximum: number;
    };
    const maxChars = body.content['application/json']!.schema.properties!.maxChars as Schema & {
      maximum: number;
    };
    expect(overlap.minimum).toBe(0);
    // The console allows up to min(1600, maxChars - 50); we accept up to maxChars - 1.
    expect(overlap.maximum).toBe(maxChars.maximum - 1);
    expect(overlap.maximum).toBeGreaterThanOrEqual(1600);
  });

  it('the first screen is the operations: the error codes are with the ErrorBody schema', () => {
    const { description } = doc.info;
    expect(description.length).toBeLessThan(600);
    expect(description).not.toMatch(/\|\s*\d{3}\s*\|/);
    expect(description).toContain('ErrorBody');
    const errorBody = doc.components.schemas.ErrorBody!;
    expect(errorBody.properties?.code?.enum).toEqual(Object.keys(ERROR_CATALOGUE));
    for (const [code, { status }] of Object.entries(ERROR_CATALOGUE)) {
      expect(errorBody.description).toContain(`| ${status} | \`${code}\` |`);
    }
  });
});

describe('converter commands', () => {
  it('the auto command names every format the converter converts', async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: `${t.prefix}/knowledge/commands`,
      headers: bearer(t.key),
    });
    const auto = res
      .json<{ items: { id: string; description: string }[] }>()
      .items.find((c) => c.id === 'auto');
    for (const format of convertibleFormats()) expect(auto?.description).toContain(format);
    for (const format of ['DOCX', 'XLSX', 'PPTX', 'ODT', 'ODS', 'JSON Lines', 'PDF', 'TIFF']) {
      expect(auto?.description).toContain(format);
    }
  });
});

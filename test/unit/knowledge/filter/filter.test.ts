/** The filter language: validation messages, meaning (the evaluator) and ISO dates. */
import { describe, expect, it } from 'vitest';
import { matchesFilter, type FilterTarget } from '../../../../src/knowledge/filter/evaluate.js';
import { parseFilter, parseFilterJson } from '../../../../src/knowledge/filter/filter.js';
import { isoMillis } from '../../../../src/knowledge/filter/iso-date.js';

const doc = (
  metadata: Record<string, unknown>,
  fields: Partial<FilterTarget> = {},
): FilterTarget => ({
  name: 'guide.md',
  fileType: 'md',
  source: 'upload',
  createdAt: '2024-05-01T12:00:00.000Z',
  metadata,
  ...fields,
});

const matches = (filter: unknown, target: FilterTarget) =>
  matchesFilter(parseFilter(filter), target);

describe('parseFilter', () => {
  it.each([
    [
      { 'metadata.year': { $gt: 'soon' } },
      'filter.metadata.year.$gt must be a number or an ISO date',
    ],
    [{ lang: { $gt: 'soon' } }, 'filter.lang.$gt must be a number or an ISO date'],
    [{ 'metadata.a': { $in: [] } }, 'filter.metadata.a.$in must be a non-empty array'],
    [{ 'metadata.a': { $regex: 'x' } }, 'filter.metadata.a.$regex is not an operator'],
    [{ $or: {} }, 'filter.$or must be a non-empty array'],
    [{ $or: [{ 'metadata.a': 1 }, 'x'] }, 'filter.$or[1] must be an object'],
    [{ 'metadata.a': null }, 'filter.metadata.a cannot be null'],
    [{ 'metadata.a': [1] }, 'filter.metadata.a must be a string, a number or a boolean'],
    [{ 'metadata.a': { $exists: 1 } }, 'filter.metadata.a.$exists must be true or false'],
    [{ name: 3 }, 'filter.name must be a string'],
    [{ name: { $gt: 'a' } }, 'filter.name.$gt compares createdAt and metadata values only'],
    [{ createdAt: { $gte: '2024-02-30' } }, 'filter.createdAt.$gte must be an ISO date'],
    [{ 'metadata.': 1 }, 'filter.metadata. names no metadata key'],
    [{ $not: {} }, 'filter.$not is not an operator here'],
    [[], 'filter must be an object'],
  ])('%j → 400 naming the bad part', (filter, message) => {
    expect(() => parseFilter(filter)).toThrow(
      expect.objectContaining({
        code: 'VALIDATION_ERROR',
        message: expect.stringContaining(message),
      }),
    );
  });

  it('refuses deep nesting, too many conditions and non-JSON text', () => {
    let deep: Record<string, unknown> = { 'metadata.a': 1 };
    for (let i = 0; i < 9; i++) deep = { $and: [deep] };
    expect(() => parseFilter(deep)).toThrow(/nests deeper than 8 levels/);
    const many = { $or: Array.from({ length: 101 }, (_, i) => ({ 'metadata.a': i })) };
    expect(() => parseFilter(many)).toThrow(/more than 100 conditions/);
    expect(() => parseFilterJson('{nope')).toThrow(/filter must be a JSON object/);
  });
});

describe('meaning', () => {
  it('equality is typed; a metadata array contains', () => {
    const d = doc({ lang: 'en', year: 2020, draft: false, tags: ['a', 'b'], n: '1' });
    expect(matches({ 'metadata.lang': 'en' }, d)).toBe(true);
    // A bare name other than a document field is a metadata key.
    expect(matches({ lang: 'en' }, d)).toBe(true);
    expect(matches({ lang: 'de' }, d)).toBe(false);
    expect(matches({ tags: 'b', year: { $gte: 2020 } }, d)).toBe(true);
    expect(matches({ 'metadata.year': 2020 }, d)).toBe(true);
    expect(matches({ 'metadata.year': '2020' }, d)).toBe(false);
    expect(matches({ 'metadata.n': 1 }, d)).toBe(false);
    expect(matches({ 'metadata.draft': false }, d)).toBe(true);
    expect(matches({ 'metadata.tags': 'b' }, d)).toBe(true);
    expect(matches({ 'metadata.tags': 'c' }, d)).toBe(false);
    expect(matches({ 'metadata.tags': { $in: ['c', 'a'] } }, d)).toBe(true);
    expect(matches({ 'metadata.tags': { $nin: ['c', 'a'] } }, d)).toBe(false);
  });

  it('$ne and $nin match documents without the key; $exists', () => {
    const d = doc({ lang: 'en' });
    expect(matches({ 'metadata.year': { $ne: 2020 } }, d)).toBe(true);
    expect(matches({ 'metadata.year': { $nin: [2020] } }, d)).toBe(true);
    expect(matches({ 'metadata.lang': { $ne: 'en' } }, d)).toBe(false);
    expect(matches({ 'metadata.year': { $exists: false } }, d)).toBe(true);
    expect(matches({ 'metadata.lang': { $exists: true } }, d)).toBe(true);
    expect(matches({ 'metadata.toString': { $exists: true } }, d)).toBe(false);
  });

  it('ranges: numbers with numbers, dates with dates, arrays never', () => {
    const d = doc({
      year: 2020,
      published: '2023-06-01',
      time: '2023-06-01T10:00:00+02:00',
      tags: ['2023-01-01'],
    });
    expect(matches({ 'metadata.year': { $gte: 2020, $lt: 2021 } }, d)).toBe(true);
    expect(matches({ 'metadata.year': { $gt: 2020 } }, d)).toBe(false);
    expect(matches({ 'metadata.year': { $gt: '2019-01-01' } }, d)).toBe(false);
    expect(matches({ 'metadata.published': { $gt: '2023-05-31T23:59:59Z' } }, d)).toBe(true);
    expect(matches({ 'metadata.published': { $gt: 5 } }, d)).toBe(false);
    // 10:00 at +02:00 is 08:00 UTC.
    expect(matches({ 'metadata.time': { $lt: '2023-06-01T08:30Z' } }, d)).toBe(true);
    expect(matches({ 'metadata.time': { $lt: '2023-06-01T08:00Z' } }, d)).toBe(false);
    expect(matches({ 'metadata.tags': { $gte: '2000-01-01' } }, d)).toBe(false);
  });

  it('document fields, $and / $or, several keys at once', () => {
    const d = doc({ lang: 'de' }, { name: 'Bericht.pdf', fileType: 'pdf', source: 'url' });
    expect(matches({ fileType: 'pdf', source: { $in: ['url', 'upload'] } }, d)).toBe(true);
    expect(matches({ name: 'bericht.pdf' }, d)).toBe(false);
    expect(matches({ createdAt: { $gte: '2024-05-01', $lt: '2024-05-02' } }, d)).toBe(true);
    expect(matches({ createdAt: '2024-05-01T14:00:00+02:00' }, d)).toBe(true);
    expect(matches({ $or: [{ 'metadata.lang': 'en' }, { fileType: 'pdf' }] }, d)).toBe(true);
    expect(matches({ $and: [{ 'metadata.lang': 'en' }, { fileType: 'pdf' }] }, d)).toBe(false);
    expect(matches({}, d)).toBe(true);
    // A metadata key named like a field is reached through `metadata.`.
    expect(matches({ 'metadata.name': 'x' }, doc({ name: 'x' }))).toBe(true);
  });
});

describe('isoMillis', () => {
  it('reads the accepted forms as instants and refuses the rest', () => {
    expect(isoMillis('2024-05-01')).toBe(Date.UTC(2024, 4, 1));
    expect(isoMillis('2024-05-01T10:00Z')).toBe(Date.UTC(2024, 4, 1, 10));
    expect(isoMillis('2024-05-01T10:00:30.5-01:30')).toBe(Date.UTC(2024, 4, 1, 11, 30, 30, 500));
    expect(isoMillis('2024-02-29')).toBe(Date.UTC(2024, 1, 29));
    for (const bad of [
      '2023-02-29',
      '2024-13-01',
      '2024-05-01T10:00',
      '2024-05-01T24:00Z',
      '0999-01-01',
      '2024-5-1',
      'soon',
      '2024-05-01T10:00:00.1234Z',
    ]) {
      expect(isoMillis(bad), bad).toBeNull();
    }
  });
});

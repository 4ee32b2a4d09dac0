/** The filter of retrieval and document lists as the API describes it (parsed by filter.ts). */
import { Type } from 'typebox';

/** Described here; parsed and validated by filter.ts (400 naming the bad part). */
export const FILTER_DESCRIPTION =
  'Only documents matching this filter (applied before ranking). Document fields by name: `name`, `fileType`, `source`, `createdAt`; any other name is a metadata key (`metadata.<key>` always is one, e.g. `metadata.name`). A value means equality (a metadata array of strings: contains it); operators `$eq`, `$ne`, `$in`, `$nin`, `$gt`, `$gte`, `$lt`, `$lte` (a number, or an ISO date such as `2024-05-01` or `2024-05-01T12:00:00Z`), `$exists`; `$and` / `$or` take arrays of filters. E.g. `{"lang": "en", "year": {"$gte": 2020}, "fileType": {"$in": ["pdf", "md"]}}`. The full reference: docs/knowledge-base.md, Filters.';

export const FilterSchema = Type.Record(Type.String(), Type.Unknown(), {
  description: FILTER_DESCRIPTION,
});

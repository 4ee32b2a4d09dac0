/** Every migration this build knows, in order. Names are permanent: never rename or reorder. */
import type { Migration } from '../migrator.js';
import * as m0001 from './0001_auth.js';
import * as m0002 from './0002_knowledge.js';
import * as m0003 from './0003_embedding_reuse.js';
import * as m0004 from './0004_jobs.js';
import * as m0005 from './0005_files.js';
import * as m0006 from './0006_search_generation.js';
import * as m0007 from './0007_search_changes.js';
import * as m0008 from './0008_plain_vector_tables.js';
import * as m0009 from './0009_document_metadata.js';
import * as m0010 from './0010_document_progress.js';
import * as m0011 from './0011_staged_chunks.js';
import * as m0012 from './0012_chunk_page_end.js';
import * as m0013 from './0013_segmented_keywords.js';
import * as m0014 from './0014_filter_dates.js';
import * as m0015 from './0015_postings_and_key_generation.js';
import * as m0016 from './0016_keyword_generation.js';
import * as m0017 from './0017_vector_centres.js';
import * as m0018 from './0018_identifier_keywords.js';
import * as m0019 from './0019_key_scopes_and_audit.js';

export const MIGRATIONS: readonly Migration[] = [
  { name: '0001_auth', up: m0001.up },
  { name: '0002_knowledge', up: m0002.up },
  { name: '0003_embedding_reuse', up: m0003.up },
  { name: '0004_jobs', up: m0004.up },
  { name: '0005_files', up: m0005.up },
  { name: '0006_search_generation', up: m0006.up },
  { name: '0007_search_changes', up: m0007.up },
  { name: '0008_plain_vector_tables', up: m0008.up },
  { name: '0009_document_metadata', up: m0009.up },
  { name: '0010_document_progress', up: m0010.up },
  { name: '0011_staged_chunks', up: m0011.up },
  { name: '0012_chunk_page_end', up: m0012.up },
  { name: '0013_segmented_keywords', up: m0013.up },
  { name: '0014_filter_dates', up: m0014.up },
  { name: '0015_postings_and_key_generation', up: m0015.up },
  { name: '0016_keyword_generation', up: m0016.up },
  { name: '0017_vector_centres', up: m0017.up },
  { name: '0018_identifier_keywords', up: m0018.up },
  { name: '0019_key_scopes_and_audit', up: m0019.up },
];

/**
 * Loose validation of a converter's `meta.json`. Converters are separate programs (possibly a
 * configured replacement), so their meta is untrusted input: known fields of the wrong type fall
 * back to defaults, unknown fields are dropped, and sizes are capped before it is stored.
 */
import type { ConverterMeta } from '../../../converter/contract.js';

const MAX_WARNINGS = 100;
const MAX_TEXT = 1000;
const MAX_ENTRIES = 10_000;

function text(value: unknown, fallback: string): string {
  return typeof value === 'string' ? value.slice(0, MAX_TEXT) : fallback;
}

function finite(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/** A ConverterMeta built from whatever `data` holds, or null if it is not a JSON object. */
export function parseMeta(data: unknown): ConverterMeta | null {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return null;
  const m = data as Record<string, unknown>;
  const timings: Record<string, number> = {};
  if (typeof m.timings === 'object' && m.timings !== null && !Array.isArray(m.timings)) {
    for (const [stage, ms] of Object.entries(m.timings).slice(0, 100)) {
      if (finite(ms)) timings[stage.slice(0, 100)] = ms;
    }
  }
  return {
    converter: text(m.converter, 'unknown'),
    converterVersion: text(m.converterVersion, ''),
    command: text(m.command, ''),
    format: text(m.format, 'unknown'),
    pages: finite(m.pages) && m.pages >= 0 ? Math.floor(m.pages) : null,
    ocrPages: Array.isArray(m.ocrPages)
      ? m.ocrPages.filter((p): p is number => finite(p)).slice(0, MAX_ENTRIES)
      : [],
    ocrMeanConfidence: finite(m.ocrMeanConfidence) ? m.ocrMeanConfidence : null,
    warnings: Array.isArray(m.warnings)
      ? m.warnings
          .filter((w): w is string => typeof w === 'string')
          .slice(0, MAX_WARNINGS)
          .map((w) => w.slice(0, MAX_TEXT))
      : [],
    timings,
  };
}

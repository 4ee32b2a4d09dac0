/**
 * FNV-1a (32 bits) over UTF-16 units: the hash the packed tables file their keys under (chunk ids
 * in id-table.ts via chunk-ids.ts, lexemes in lexeme-table.ts). `fnvStep` lets a caller hash units
 * it holds elsewhere (packed bytes, a Uint16Array) without making the string.
 */
export const FNV_OFFSET = 0x811c9dc5;

/** The running hash `h` after one more unit. */
export const fnvStep = (h: number, unit: number): number => Math.imul(h ^ unit, 0x01000193);

/** The hash of a string's UTF-16 units (unsigned). */
export function fnv1a(text: string): number {
  let h = FNV_OFFSET;
  for (let i = 0; i < text.length; i++) h = fnvStep(h, text.charCodeAt(i));
  return h >>> 0;
}

/** Values in PostgreSQL's wire formats, so that vectors and tsvectors travel as one parameter. */

/** A tsvector literal: `'lexeme':1A,4 …`. */
export function tsvectorLiteral(positions: Map<string, string[]>): string {
  let literal = '';
  for (const [lexeme, list] of positions) {
    literal += `${literal === '' ? '' : ' '}'${lexeme.replaceAll('\\', '\\\\').replaceAll("'", "''")}':${list.join(',')}`;
  }
  return literal;
}

/** pgvector's binary format of a vector: int16 dimensions, int16 0, float4 values (big-endian). */
export function vectorBinary(v: Float32Array): Buffer {
  const buffer = Buffer.allocUnsafe(4 + 4 * v.length);
  buffer.writeInt16BE(v.length, 0);
  buffer.writeInt16BE(0, 2);
  for (let i = 0; i < v.length; i++) buffer.writeFloatBE(v[i] ?? 0, 4 + 4 * i);
  return buffer;
}

/** A one-dimensional `vector[]` in PostgreSQL's binary array format (sent as one parameter). */
export function vectorArrayBinary(vectorOid: number, vectors: readonly Float32Array[]): Buffer {
  let size = 20;
  for (const v of vectors) size += 8 + 4 * v.length;
  const buffer = Buffer.allocUnsafe(size);
  buffer.writeInt32BE(1, 0); // dimensions of the array
  buffer.writeInt32BE(0, 4); // no nulls
  buffer.writeUInt32BE(vectorOid, 8);
  buffer.writeInt32BE(vectors.length, 12);
  buffer.writeInt32BE(1, 16); // lower bound
  let at = 20;
  for (const v of vectors) {
    buffer.writeInt32BE(4 + 4 * v.length, at);
    buffer.writeInt16BE(v.length, at + 4);
    buffer.writeInt16BE(0, at + 6);
    at += 8;
    for (let i = 0; i < v.length; i++, at += 4) buffer.writeFloatBE(v[i] ?? 0, at);
  }
  return buffer;
}

/** pgvector's text output (`[1,2.5,…]`, shortest float4 digits) back to a vector. */
export function parseVector(text: string): Float32Array {
  const body = text.slice(1, -1);
  if (body === '') return new Float32Array(0);
  return Float32Array.from(body.split(','), Number);
}

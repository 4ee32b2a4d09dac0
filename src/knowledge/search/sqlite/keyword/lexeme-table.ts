/**
 * The keyword vocabulary of one Fts5Lexer: lexeme ↔ id, ids dense from 0 in the order lexemes
 * were first seen. Packed: the UTF-16 units of every lexeme one after another in a Uint16Array,
 * where each starts in a Uint32Array, and an open-addressing Int32Array of ids keyed by a 32-bit
 * FNV-1a hash of the units: ~28 bytes a lexeme instead of a string, a Map entry and an array slot
 * (~60). A corpus with a million distinct lexemes (codes, numbers, labels) holds ~30 MB less,
 * and nothing for the collector to walk.
 */
import { FNV_OFFSET, fnv1a, fnvStep } from '../common/fnv1a.js';

const EMPTY = -1;

/** fnv1a of the text these units spell. */
function hashOfUnits(units: Uint16Array, start: number, end: number): number {
  let h = FNV_OFFSET;
  for (let i = start; i < end; i++) h = fnvStep(h, units[i] as number);
  return h >>> 0;
}

/** Units per String.fromCharCode call (its arguments go on the stack). */
const CHUNK = 4096;

export class LexemeTable {
  private units = new Uint16Array(4096);
  private used = 0;
  /** starts[id] .. starts[id + 1]: the units of lexeme `id`. */
  private starts = new Uint32Array(1025);
  private slots = new Int32Array(2048).fill(EMPTY);
  /** Lexemes held: every id is below this. */
  size = 0;

  /** The id of `lexeme`, or -1. */
  idOf(lexeme: string): number {
    const slots = this.slots;
    const mask = slots.length - 1;
    for (let i = fnv1a(lexeme) & mask; ; i = (i + 1) & mask) {
      const id = slots[i] as number;
      if (id === EMPTY) return -1;
      if (this.holds(id, lexeme)) return id;
    }
  }

  /** The id of `lexeme`, given the next one when it has none. */
  intern(lexeme: string): number {
    const slots = this.slots;
    const mask = slots.length - 1;
    let i = fnv1a(lexeme) & mask;
    for (; ; i = (i + 1) & mask) {
      const id = slots[i] as number;
      if (id === EMPTY) break;
      if (this.holds(id, lexeme)) return id;
    }
    const id = this.size++;
    this.append(lexeme);
    slots[i] = id;
    // At most half full: probes stay short.
    if (this.size * 2 > slots.length) this.rehash(slots.length * 2);
    return id;
  }

  /** The lexeme of `id` ('' for none). */
  lexeme(id: number): string {
    if (id < 0 || id >= this.size) return '';
    const start = this.starts[id] as number;
    const end = this.starts[id + 1] as number;
    let text = '';
    for (let at = start; at < end; at += CHUNK) {
      const part = this.units.subarray(at, Math.min(end, at + CHUNK));
      text += String.fromCharCode.apply(null, part as unknown as number[]);
    }
    return text;
  }

  /** Bytes held. */
  get byteLength(): number {
    return this.units.byteLength + this.starts.byteLength + this.slots.byteLength;
  }

  /** Whether lexeme `id` is `text`. */
  private holds(id: number, text: string): boolean {
    const start = this.starts[id] as number;
    if ((this.starts[id + 1] as number) - start !== text.length) return false;
    const units = this.units;
    for (let k = 0; k < text.length; k++) {
      if (units[start + k] !== text.charCodeAt(k)) return false;
    }
    return true;
  }

  private append(text: string): void {
    const id = this.size - 1;
    if (this.used + text.length > this.units.length) {
      const units = new Uint16Array(
        Math.max(this.used + text.length, Math.ceil(this.units.length * 1.5)),
      );
      units.set(this.units.subarray(0, this.used));
      this.units = units;
    }
    for (let k = 0; k < text.length; k++) this.units[this.used + k] = text.charCodeAt(k);
    this.used += text.length;
    if (id + 2 > this.starts.length) {
      const starts = new Uint32Array(Math.ceil(this.starts.length * 1.5));
      starts.set(this.starts);
      this.starts = starts;
    }
    this.starts[id + 1] = this.used;
  }

  private rehash(size: number): void {
    const slots = new Int32Array(size).fill(EMPTY);
    const mask = size - 1;
    for (let id = 0; id < this.size; id++) {
      let i =
        hashOfUnits(this.units, this.starts[id] as number, this.starts[id + 1] as number) & mask;
      while (slots[i] !== EMPTY) i = (i + 1) & mask;
      slots[i] = id;
    }
    this.slots = slots;
  }
}

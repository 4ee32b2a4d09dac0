/** Format detection trusts content first and the name second. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileTypeFromBuffer } from 'file-type';
import { describe, expect, it } from 'vitest';
import {
  BINARY_DATA,
  describeUnsupported,
  detectFormat,
  sniffSignature,
  type Detection,
} from '../../src/converter/formats/detect.js';
import { SAMPLES, tempDir } from './helpers.js';

const bytes = (text: string) => new TextEncoder().encode(text);

async function detect(name: string, content: Uint8Array): Promise<Detection> {
  const signature = await fileTypeFromBuffer(content);
  return detectFormat(name, content, signature);
}

describe('detectFormat', () => {
  it('does not treat a PNG, PDF or ZIP renamed .txt as text', async () => {
    expect(await detect('notes.txt', SAMPLES.png)).toEqual({
      kind: 'binary',
      format: 'png',
      mime: 'image/png',
      description: 'PNG image',
    });
    expect(await detect('notes.txt', SAMPLES.pdf)).toMatchObject({
      kind: 'binary',
      format: 'pdf',
      mime: 'application/pdf',
    });
    expect(await detect('data.csv', SAMPLES.zip)).toMatchObject({
      kind: 'unsupported',
      format: 'zip',
    });
  });

  it('calls bytes that are not text binary data, whatever the name', async () => {
    const garbage = new Uint8Array(256).map((_, i) => (i * 7919) % 256);
    expect(await detect('readme.txt', garbage)).toEqual(BINARY_DATA);
    expect(describeUnsupported(BINARY_DATA as Detection & { kind: 'unsupported' })).toBe(
      'application/octet-stream (binary data, not text)',
    );
  });

  it('picks text formats by extension', async () => {
    const cases: [string, string][] = [
      ['a.txt', 'text'],
      ['a.LOG', 'text'],
      ['a.md', 'markdown'],
      ['a.markdown', 'markdown'],
      ['a.html', 'html'],
      ['a.htm', 'html'],
      ['a.csv', 'csv'],
      ['a.tsv', 'tsv'],
      ['a.json', 'json'],
      ['a.ndjson', 'jsonl'],
      ['no-extension', 'text'],
      ['script.py', 'text'],
    ];
    for (const [name, format] of cases) {
      expect(await detect(name, bytes('hello, world')), name).toEqual({ kind: 'text', format });
    }
  });

  it('treats an HTML document named .txt (or unnamed) as HTML, but not one named .md', async () => {
    const page = bytes('<!DOCTYPE html>\n<html><body><p>hi</p></body></html>');
    expect(await detect('saved-page.txt', page)).toEqual({ kind: 'text', format: 'html' });
    expect(await detect('download', page)).toEqual({ kind: 'text', format: 'html' });
    expect(await detect('page.md', page)).toEqual({ kind: 'text', format: 'markdown' });
  });

  it('lets text-based signatures (XML, vCard) through to the text rules', async () => {
    expect(await detect('feed.txt', bytes('<?xml version="1.0"?><feed/>'))).toEqual({
      kind: 'text',
      format: 'text',
    });
    expect(await detect('card.txt', bytes('BEGIN:VCARD\nVERSION:4.0\nEND:VCARD\n'))).toEqual({
      kind: 'text',
      format: 'text',
    });
  });

  it('does not let short magic numbers at the start of prose make it binary', async () => {
    for (const start of ['BMW annual report', 'MZ: notes', 'ID3 tags explained', 'FORM 10-K']) {
      expect(await detect('a.txt', bytes(`${start}, and more words.\n`)), start).toEqual({
        kind: 'text',
        format: 'text',
      });
    }
    // …but a text-based document format stays what it is.
    expect(await detect('a.txt', bytes('%PDF-1.4\n1 0 obj << >> endobj\n'))).toMatchObject({
      kind: 'binary',
      format: 'pdf',
    });
    expect(await detect('a.txt', bytes('{\\rtf1\\ansi Hello}'))).toMatchObject({ format: 'rtf' });
  });

  it('accepts UTF-16 text with a BOM', async () => {
    const utf16 = new Uint8Array([0xff, 0xfe, ...Array.from(Buffer.from('hello', 'utf16le'))]);
    expect(await detect('a.txt', utf16)).toEqual({ kind: 'text', format: 'text' });
  });

  it('sniffs the signature from a file on disk', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'x.txt'), SAMPLES.png);
    writeFileSync(join(dir, 'y.txt'), 'just text');
    expect(await sniffSignature(join(dir, 'x.txt'))).toEqual({ ext: 'png', mime: 'image/png' });
    expect(await sniffSignature(join(dir, 'y.txt'))).toBeUndefined();
  });
});

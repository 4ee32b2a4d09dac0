/**
 * DOCX → markdown: mammoth turns the WordprocessingML into semantic HTML (headings from the
 * Heading styles, lists from numbering, tables, footnotes and endnotes), then the project's
 * htmlToMarkdown makes GFM of it. Mammoth never sees the file: it is handed a zip-like object
 * whose reads go through the guarded archive, so every zip limit applies to what it reads, and
 * images are never inflated (only their alt text is kept).
 */
import mammoth from 'mammoth';
import { htmlWithNotesToMarkdown, noteRef, type Note } from './markup.js';
import type { ZipArchive } from './zip.js';

type MammothInput = Parameters<typeof mammoth.convertToHtml>[0];

/** The object mammoth's unzip step accepts as `{ file }` (its own JSZip wrapper's interface). */
function mammothFile(archive: ZipArchive) {
  return {
    exists: (name: string) => archive.has(name),
    read: async (name: string, encoding?: string) => {
      const bytes = await archive.read(name);
      if (encoding === undefined) return bytes;
      if (encoding === 'base64') return bytes.toString('base64');
      return new TextDecoder(encoding).decode(bytes);
    },
    write: () => {
      throw new Error('read-only archive');
    },
    toArrayBuffer: () => {
      throw new Error('read-only archive');
    },
  };
}

/** A `src` the HTML converter recognises as inline data: it keeps the alt text, drops the rest. */
const NO_IMAGE = mammoth.images.imgElement(() => Promise.resolve({ src: 'data:,' }));

/**
 * Mammoth writes a reference as `<sup><a href="#footnote-1" id="footnote-ref-1">[1]</a></sup>`
 * and all notes as one final `<ol>` of `<li id="footnote-1">… <a href="#footnote-ref-1">↑</a>`.
 * The list is cut off and split at those ids (not at `</li>`, which a note with a list inside
 * also contains); the numbers mammoth shows, unique across foot- and endnotes, become the labels.
 */
function splitNotes(html: string): { body: string; notes: Note[] } {
  const labels = new Map<string, string>();
  const body0 = html.replace(
    /<sup><a href="#((?:foot|end)note-[^"]+)" id="[^"]*">\[(\d+)\]<\/a><\/sup>/g,
    (_m, id: string, n: string) => {
      labels.set(id, n);
      return noteRef(n);
    },
  );
  const start = Math.max(
    body0.lastIndexOf('<ol><li id="footnote-'),
    body0.lastIndexOf('<ol><li id="endnote-'),
  );
  if (start < 0) return { body: body0, notes: [] };
  const list = body0.slice(start + '<ol>'.length).replace(/<\/ol>\s*$/, '');
  const notes: Note[] = [];
  const parts = list.split(/<li id="((?:foot|end)note-[^"]+)">/);
  for (let i = 1; i + 1 < parts.length; i += 2) {
    const id = parts[i] ?? '';
    const html = (parts[i + 1] ?? '')
      .replace(/<\/li>\s*$/, '')
      .replace(/\s*<a href="#(?:foot|end)note-ref-[^"]+">↑<\/a>/g, '');
    notes.push({ label: labels.get(id) ?? id, html });
  }
  return { body: body0.slice(0, start), notes };
}

export async function docxToMarkdown(
  archive: ZipArchive,
): Promise<{ markdown: string; warnings: string[] }> {
  const input = { file: mammothFile(archive) } as unknown as MammothInput;
  const result = await mammoth.convertToHtml(input, { convertImage: NO_IMAGE });
  const { body, notes } = splitNotes(result.value);
  const warnings = result.messages
    .filter((m) => m.type === 'error')
    .map((m) => `part of the document could not be read: ${m.message}`);
  return { markdown: htmlWithNotesToMarkdown(body, notes), warnings };
}

/**
 * Open Packaging Conventions (the OOXML container): parts are found through `.rels` files, not by
 * fixed names, so a workbook or presentation written by a tool that names its parts differently
 * still converts. Well-known default names are the fallback.
 */
import { EXIT_CODES } from '../../contract.js';
import { ConvertError } from '../convert-error.js';
import { attr, childrenNamed, parseXml, type XmlElement } from './xml.js';
import type { ZipArchive } from './zip.js';

export interface Relationship {
  id: string;
  /** The last segment of the type URI, e.g. `officeDocument`, `worksheet`, `notesSlide`. */
  type: string;
  /** Resolved part name inside the package (no leading slash). */
  target: string;
}

export function dirname(part: string): string {
  const slash = part.lastIndexOf('/');
  return slash < 0 ? '' : part.slice(0, slash);
}

/** Resolves a relationship target against the directory of its source part. */
function resolvePart(baseDir: string, target: string): string {
  const segments = target.startsWith('/') ? [] : baseDir.split('/').filter((s) => s !== '');
  for (const segment of target.split('/')) {
    if (segment === '..') segments.pop();
    else if (segment !== '.' && segment !== '') segments.push(segment);
  }
  return segments.join('/');
}

/** The relationships of `part` (`dir/_rels/name.rels`); none when the rels part is missing. */
export async function readRelationships(
  archive: ZipArchive,
  part: string,
): Promise<Relationship[]> {
  const dir = dirname(part);
  const base = part.slice(dir === '' ? 0 : dir.length + 1);
  const relsPart = `${dir === '' ? '' : `${dir}/`}_rels/${base}.rels`;
  if (!archive.has(relsPart)) return [];
  const root = await parseTree(archive, relsPart);
  const out: Relationship[] = [];
  for (const rel of childrenNamed(root, 'Relationship')) {
    const id = attr(rel, 'Id');
    const target = attr(rel, 'Target');
    if (id === undefined || target === undefined || attr(rel, 'TargetMode') === 'External') {
      continue;
    }
    const type = (attr(rel, 'Type') ?? '').split('/').pop() ?? '';
    out.push({ id, type, target: resolvePart(dir, decodeTarget(target)) });
  }
  return out;
}

/** Targets are URIs (`my%20sheet.xml`); a malformed escape is kept as written. */
function decodeTarget(target: string): string {
  try {
    return decodeURI(target);
  } catch {
    return target;
  }
}

/** The main part named by the package's `_rels/.rels`, or `fallback` if that names none. */
export async function mainPart(
  archive: ZipArchive,
  fallback: string,
  what: string,
): Promise<string> {
  const rels = await readRelationships(archive, '');
  const main = rels.find((r) => r.type === 'officeDocument' && archive.has(r.target));
  const part = main?.target ?? fallback;
  if (!archive.has(part)) {
    throw new ConvertError(EXIT_CODES.CORRUPT, `the ${what} file has no main part (${fallback})`);
  }
  return part;
}

/** A part parsed into a tree; malformed XML is CORRUPT. */
export async function parseTree(archive: ZipArchive, part: string): Promise<XmlElement> {
  const text = await archive.text(part);
  try {
    return parseXml(text);
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    const what = /nested more than/.test(reason ?? '') ? 'cannot be read' : 'is not valid XML';
    throw new ConvertError(EXIT_CODES.CORRUPT, `the part ${part} ${what} (${reason})`);
  }
}

import { describe, expect, it } from 'vitest';
import { embeddingText } from '../../../src/knowledge/chunking/chunk-hashes.js';
import { unescapeInline, unescapeMarkdown } from '../../../src/knowledge/chunking/markdown-text.js';

describe('unescapeMarkdown', () => {
  it('removes escapes outside code, keeps them inside code spans and fenced blocks', () => {
    expect(unescapeInline('XML\\_ParserCreate \\*not\\* 1\\. \\#')).toBe(
      'XML_ParserCreate *not* 1. #',
    );
    expect(unescapeInline('`a\\_b` and c\\_d ``x\\_`y`` e\\_f')).toBe(
      '`a\\_b` and c_d ``x\\_`y`` e_f',
    );
    expect(unescapeInline('an escaped \\` tick, a\\_b')).toBe('an escaped ` tick, a_b');
    expect(unescapeInline('C:\\path\\n stays')).toBe('C:\\path\\n stays');
    const md = 'BZ\\_OK\n\n```c\nprintf("\\\\n"); a\\_b\n```\nafter\\_fence\n~~~\nx\\_y\n~~~';
    expect(unescapeMarkdown(md)).toBe(
      'BZ_OK\n\n```c\nprintf("\\\\n"); a\\_b\n```\nafter_fence\n~~~\nx\\_y\n~~~',
    );
  });
});

describe('embeddingText', () => {
  it('embeds the trail and the unescaped content', () => {
    expect(embeddingText({ sectionPath: 'API > XML_Parse', content: 'Calls XML\\_Parse.' })).toBe(
      'API > XML_Parse\nCalls XML_Parse.',
    );
    expect(embeddingText({ sectionPath: '', content: 'a\\_b' })).toBe('a_b');
  });

  it('embeds a table of contents as its trail alone', () => {
    const content = '1 Introduction . . . . 1\n\n2 Copyright . . . . 2\n\n3 Usage . . . . 3';
    expect(
      embeddingText({ sectionPath: 'Table of Contents', content, metadata: { kind: 'toc' } }),
    ).toBe('Table of Contents');
    expect(embeddingText({ sectionPath: 'Table of Contents', content })).toContain('Copyright');
  });
});

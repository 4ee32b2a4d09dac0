/**
 * Identifier tokens (identifiers.ts): what the keyword indexes read beside a text and what a query
 * asks for, on the identifier shapes of real API references.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DEFINED,
  identifierGroups,
  identifierTokens,
  JOINER,
} from '../../../../src/knowledge/search/identifiers.js';
import { keywordText, visibleText } from '../../../../src/knowledge/search/keyword-text.js';
import { koreanNouns } from '../../../../src/knowledge/search/korean.js';
import { queryWordGroups } from '../../../../src/knowledge/search/query-terms.js';

/** Tokens written with `·` for the joiner, for readable expectations. */
const shown = (tokens: string[]) =>
  tokens.map((t) => t.replaceAll(JOINER, '·').replaceAll(DEFINED, '^'));

/** The tokens of a mention of `text` (in a sentence, not where a term is defined). */
const mention = (text: string) => shown(identifierTokens(`see ${text}`));

describe('identifierTokens', () => {
  it.each([
    ['asn1_der_decoding', ['asn1·der·decoding·']],
    ['XML_SetDefaultHandler', ['set', 'default', 'handler', 'xml·setdefaulthandler·']],
    ['os.path.join', ['os·path·join·', 'path·join·']],
    [
      'std::vector::emplace_back',
      ['std·vector·emplace·back·', 'vector·emplace·back·', 'emplace·back·'],
    ],
    ['--num-callers=12', ['·num·callers·']],
    ['tar -x -f', ['·x·', '·f·']],
    ['CVE-2024-3094', ['cve·2024·3094·']],
    ['version 5.6.1', ['5·6·1·']],
    ['0x80070005 E1234', []],
    ['/etc/ssh/sshd_config', ['·etc·ssh·sshd·config·', 'ssh·sshd·config·', 'sshd·config·']],
    ['config.yaml', ['config·yaml·']],
    ['__init__', ['·init·']],
    ['getHTTPResponse', ['get', 'http', 'response']],
    ['a -5 or x - y, end. Next', []],
  ])('%s', (text, tokens) => {
    expect(mention(text)).toEqual(tokens);
  });

  it('marks a term where it is defined: a line it starts, after marks, list numbers or type words', () => {
    const defined = (text: string) =>
      shown(identifierTokens(text)).filter((t) => t.startsWith('^'));
    expect(defined('errno.ENOENT\n\nNo such file or directory.')).toEqual([
      '^errno·enoent·',
      '^enoent·',
    ]);
    expect(defined('int asn1_read_value (asn1_node root)')).toEqual(['^asn1·read·value·']);
    expect(defined('```\n--num-callers=<number> [default: 12]\n```')).toEqual(['^·num·callers·']);
    expect(defined('## 4.2 XML_SetDefaultHandler')).toEqual(['^xml·setdefaulthandler·']);
    expect(defined('-   **ENOENT**: missing')).toEqual(['^enoent·']);
    // Mentions: in a sentence, an index entry, a link's text, a doctest, an indented code line.
    expect(defined('Use asn1_read_value to read.')).toEqual([]);
    expect(defined('asn1_read_value 13\nasn1_der_coding .... 2.1')).toEqual([]);
    expect(defined('-   [`ENOENT`](#errno.ENOENT)')).toEqual([]);
    expect(defined('>>> json.dumps([1, 2])')).toEqual([]);
    expect(defined('    v.emplace_back(1);')).toEqual([]);
    // A plain word is no term; a section path defines its last section's term only.
    expect(defined('Returns the value.')).toEqual([]);
    expect(shown(identifierTokens('std::vector::emplace_back > Notes', 'path'))).not.toContain(
      '^emplace·back·',
    );
    expect(shown(identifierTokens('Reference > std::vector::emplace_back', 'path'))).toContain(
      '^emplace·back·',
    );
  });

  it('reads a link by its text, an escaped identifier as it is shown (keywordText)', () => {
    const link = '[`emplace\\_back`](vector/emplace_back.html "cpp/container/vector/emplace back")';
    expect(visibleText(link)).toBe('[`emplace_back`]');
    expect(shown(keywordText(`see ${link}`).split('\n').slice(1))).toEqual(['emplace·back·']);
  });

  it('makes no whole token of a run in a script without spaces, nor of a long path', () => {
    expect(identifierTokens('数据_模型')).toEqual([]);
    expect(identifierTokens(Array.from({ length: 13 }, (_, i) => `p${i}`).join('/'))).toEqual([]);
  });

  it('gives each identifier of two or more parts one token of letters, digits and joiners', () => {
    const part = fc.stringMatching(/^[a-z][a-z0-9]{0,7}$/);
    const connector = fc.constantFrom('_', '.', '-', '::', '/', '__');
    const identifier = fc
      .tuple(part, fc.array(fc.tuple(connector, part), { minLength: 1, maxLength: 5 }))
      .map(([head, rest]) => ({ text: head + rest.map(([c, p]) => c + p).join(''), head, rest }));
    fc.assert(
      fc.property(identifier, ({ text, head, rest }) => {
        const whole = [head, ...rest.map(([, p]) => p)].join(JOINER) + JOINER;
        const tokens = identifierTokens(`see ${text} here`);
        expect(tokens[0]).toBe(whole);
        for (const t of tokens) expect(t).toMatch(/^[\p{L}\p{N}\uE000]+\uE000$/u);
        // Where it is defined, the same tokens and each once more, marked.
        const defined = identifierTokens(`${text} here`);
        expect(defined.filter((t) => !t.startsWith(DEFINED))).toEqual(tokens);
        expect(defined).toContain(DEFINED + whole);
        // The query asks for the same whole token.
        expect(queryWordGroups(text)).toContainEqual([whole]);
      }),
    );
  });
});

describe('keywordText', () => {
  it('is the text itself (segmented) when it has no identifier', () => {
    expect(keywordText('plain words only')).toBe('plain words only');
    expect(keywordText('训练数据')).toBe(' 训练  数据 ');
  });

  it('adds the identifier tokens after the text', () => {
    expect(keywordText('call os.path.join').replaceAll(JOINER, '·')).toBe(
      'call os.path.join\nos·path·join· path·join·',
    );
  });
});

describe('query groups', () => {
  it('add the whole identifier and keep the stop words inside it', () => {
    expect(shown(queryWordGroups('is_valid').flat())).toEqual([
      'is',
      'valid',
      'is·valid·',
      '^is·valid·',
    ]);
    expect(queryWordGroups('what is it')).toEqual([['what'], ['is'], ['it']]);
    expect(shown(queryWordGroups('how is state-of-the-art measured').flat())).toEqual([
      'state',
      'of',
      'the',
      'art',
      'measured',
      'state·of·the·art·',
      '^state·of·the·art·',
    ]);
  });

  it('ask for the parts of a CamelCase word together', () => {
    const whole = `${DEFINED}defaulthandler${JOINER}`;
    expect(identifierGroups('DefaultHandler')).toEqual([['default', 'handler'], [whole]]);
    expect(queryWordGroups('DefaultHandler')).toEqual([
      ['defaulthandler'],
      ['default', 'handler'],
      [whole],
    ]);
  });
});

describe('Korean nouns', () => {
  it('reads the noun of a word with a particle, longest particle first, and asks for it', () => {
    const nouns: string[] = [];
    koreanNouns('우리는 한국어 데이터를 사용하여 서울에서부터 사이 학교에서', nouns);
    expect(nouns).toEqual(['우리', '데이터', '서울', '학교']);
    expect(keywordText('데이터를 보내')).toBe('데이터를 보내\n데이터');
    expect(queryWordGroups('데이터가')).toEqual([['데이터가'], ['데이터']]);
  });
});

describe('what is an identifier', () => {
  it('splits CamelCase words, not plural acronyms nor codes of letters and digits', () => {
    for (const word of ['APIs', 'ESCs', 'HNF4A', 'H3K9me3', 'MeCP2', 'mRNA', 'PrP', 'IgG'])
      expect(mention(word), word).toEqual([]);
    expect(mention('setTimeout')).toEqual(['set', 'timeout']);
    expect(mention('XMLParser')).toEqual(['xml', 'parser']);
  });

  it('in a sentence, asks for the whole of identifiers written as code only', () => {
    const wholes = (query: string) =>
      shown(identifierGroups(query).flat()).filter((t) => t.includes('·'));
    // A lookup: every identifier whole.
    expect(wholes('CVE-2024-3094')).toEqual(['cve·2024·3094·', '^cve·2024·3094·']);
    expect(wholes('libtasn1 3.7')).toEqual(['^libtasn1·', '3·7·']);
    // A sentence: prose compounds are words, code is whole.
    expect(wholes('IL-6 levels rise above 0.05 in T-cell lymphoma patients')).toEqual([]);
    expect(wholes('how do I call asn1_der_decoding on a buffer')).toEqual([
      'asn1·der·decoding·',
      '^asn1·der·decoding·',
    ]);
  });
});

/** Permalink anchors of documentation generators never reach headings or text (html-permalinks.ts). */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { htmlToMarkdown } from '../../src/converter/formats/html.js';
import { isPermalink, type AnchorNode } from '../../src/converter/formats/html-permalinks.js';

const md = (html: string) => htmlToMarkdown(html).markdown;
const headings = (markdown: string) => markdown.match(/^#{1,6} .*$/gm) ?? [];

/** A Sphinx 7 page section, as `sphinx-build -b html` writes it (basic theme). */
const SPHINX = `<section id="installation">
<h2>Installation<a class="headerlink" href="#installation" title="Link to this heading">¶</a></h2>
<p>Run the installer.</p>
<section id="from-source">
<h3>From source<a class="headerlink" href="#from-source" title="Permalink to this heading">¶</a></h3>
<dl class="py function">
<dt class="sig sig-object py" id="os.path.join">
<span class="sig-prename descclassname"><span class="pre">os.path.</span></span><span class="sig-name descname"><span class="pre">join</span></span><span class="sig-paren">(</span><em class="sig-param"><span class="n"><span class="pre">path</span></span></em><span class="sig-paren">)</span><a class="headerlink" href="#os.path.join" title="Link to this definition">¶</a></dt>
<dd><p>Join one or more path segments.</p></dd>
</dl>
<div class="literal-block-wrapper docutils container" id="id1">
<div class="code-block-caption"><span class="caption-text">setup.cfg</span><a class="headerlink" href="#id1" title="Link to this code">¶</a></div>
</div>
</section>
</section>`;

/** MkDocs (python-markdown toc, `permalink: true`), and Material's `#` sign. */
const MKDOCS = `<h1 id="user-guide">User Guide<a class="headerlink" href="#user-guide" title="Permanent link">&para;</a></h1>
<p>Welcome.</p>
<h2 id="configuration">Configuration<a class="headerlink" href="#configuration" title="Permanent link">#</a></h2>
<h2 id="plugins"><a class="toclink" href="#plugins">Plugins</a></h2>
<h3 id="search-plugin">The <code>search</code> plugin<a class="headerlink" href="#search-plugin" title="Permanent link">&para;</a></h3>`;

describe('HTML permalinks', () => {
  it('drops Sphinx headerlinks from headings, definitions and captions', () => {
    const out = md(SPHINX);
    expect(headings(out)).toEqual(['## Installation', '### From source']);
    expect(out).toContain('os.path.join(_path_)');
    expect(out).toContain('setup.cfg');
    expect(out).not.toMatch(/¶|Permalink|Link to this|\(#/);
  });

  it('drops MkDocs headerlinks (¶ and #) and unwraps toclink headings', () => {
    const out = md(MKDOCS);
    expect(headings(out)).toEqual([
      '# User Guide',
      '## Configuration',
      '## Plugins',
      '### The `search` plugin',
    ]);
    expect(out).not.toMatch(/¶|Permanent link|\]\(#/);
  });

  it('drops Docusaurus, VitePress and rustdoc anchors, leaving no stray space', () => {
    const out = md(
      '<h2 id="a">Alpha<a href="#a" class="hash-link" title="Direct link to Alpha">\u200B</a></h2>' +
        '<h2 id="b"><a class="header-anchor" href="#b">#</a> Beta</h2>' +
        '<h2 id="c" class="section-header">Gamma<a href="#c" class="anchor">§</a></h2>',
    );
    expect(headings(out)).toEqual(['## Alpha', '## Beta', '## Gamma']);
  });

  it('keeps cross-references, and links to other pages, in the text', () => {
    const out = md(
      '<p>See <a class="reference internal" href="#installation">Installation</a>, ' +
        'the <a href="https://example.test/#x">manual</a> and <a href="other.html">¶</a>.</p>',
    );
    expect(out).toContain('[Installation](#installation)');
    expect(out).toContain('[manual](https://example.test/#x)');
    expect(out).toContain('[¶](other.html)');
  });

  it('any heading text survives its permalink whole (property)', () => {
    const word = fc.stringMatching(/^[A-Za-z][A-Za-z0-9]{0,11}$/);
    fc.assert(
      fc.property(fc.array(word, { minLength: 1, maxLength: 6 }), (words) => {
        const title = words.join(' ');
        const html = `<h2 id="s">${title}<a class="headerlink" href="#s" title="Permalink to this heading">¶</a></h2>`;
        expect(md(html)).toBe(`## ${title}\n`);
      }),
    );
  });
});

describe('isPermalink', () => {
  const a = (href: string, text: string, cls = ''): AnchorNode => ({
    nodeName: 'A',
    parentNode: null,
    textContent: text,
    getAttribute: (name) => (name === 'href' ? href : name === 'class' ? cls : null),
  });

  it('is a sign-only or generator-marked link to this page', () => {
    expect(isPermalink(a('#x', '¶'))).toBe(true);
    expect(isPermalink(a('#x', ' # '))).toBe(true);
    expect(isPermalink(a('#x', ''))).toBe(true);
    expect(isPermalink(a('#x', '§', 'anchor'))).toBe(true);
    expect(isPermalink(a('#x', 'Setup'))).toBe(false);
    expect(isPermalink(a('page.html#x', '¶'))).toBe(false);
    expect(isPermalink({ ...a('#x', '¶'), nodeName: 'SPAN' })).toBe(false);
  });
});

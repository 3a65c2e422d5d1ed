/**
 * The sentences of a document for the built-in answerer, read through its markup: Markdown and
 * reStructuredText headings, directives, roles, code spans and code blocks; plain text as well.
 * Paragraphs wrapped over several lines are joined before they are split into sentences, so no sentence
 * starts in the middle; a signature (`.. function:: gcd(*integers)`, a Markdown definition term, a plain
 * `math.gcd(*integers)` line) goes with the sentences that describe it, named with its module (from a
 * module directive, or the page's title "`math` --- …" when the text is a chunk without one) and its
 * class (a method declared inside its class's directive), and a sentence ending in ":" keeps the first
 * line of the code block that follows.
 */
export interface Passage {
  text: string;
  /** The heading of the section the sentence is in (a Markdown or reStructuredText heading, a FAQ question). */
  heading: string | null;
  /** A heading itself: context for the sentences after it, never an answer. */
  isHeading: boolean;
  /** The signature the sentence describes (`math.gcd(*integers)`), shown before it in an answer. */
  signature: string | null;
  /** The module of the page or section (`timeit`), named when the sentence says "this module". */
  module: string | null;
}

const SIGNATURE_DIRECTIVE =
  /^(py:)?(function|method|class|classmethod|staticmethod|exception|attribute|data|decorator|decoratormethod|property|coroutinefunction|coroutinemethod|abstractmethod)$/;
/** Directives whose body is code or markup, not prose. */
const CODE_DIRECTIVE =
  /^(code-block|code|sourcecode|doctest|testcode|testsetup|testcleanup|testoutput|productionlist|literalinclude|highlight|index|toctree|raw|include|csv-table|image|math)$/;
/** A page titled after its module: "math --- Mathematical functions", "`json` — JSON encoder". */
const MODULE_TITLE = /^`?!?([A-Za-z_][\w.]*)`?\s+(?:—|–|---|--|-)\s/;
/** A plain-text signature line: `math.gcd(*integers)`, `hash.digest()`. */
const SIGNATURE_LINE = /^[A-Za-z_][\w.]*\([^()]*(\([^()]*\)[^()]*)*\)(\s*->\s*\S+)?$/;
const CODE_ROLES =
  /^(py:)?(func|meth|class|exc|attr|data|mod|obj|const|envvar|option|program|file|samp|kbd)$/;

/** Inline markup to text: roles, literals, emphasis, links. Code keeps its backticks. */
export function cleanInline(text: string): string {
  return (
    text
      // :role:`title <target>` and :role:`target` (with ! or ~ prefixes)
      .replace(/:([\w:-]+):`([^`]*)`/g, (_, role: string, body: string) => {
        let inner = body.replace(/\s*<[^>]*>\s*$/, '').trim();
        if (inner.startsWith('!')) inner = inner.slice(1);
        if (inner.startsWith('~')) inner = inner.slice(1).split('.').at(-1) ?? inner;
        return CODE_ROLES.test(role) ? `\`${inner}\`` : inner;
      })
      // ``literal`` → `literal`
      .replace(/``([^`]+)``/g, '`$1`')
      // `text <url>`_ and `text`_ (reStructuredText links)
      .replace(/`([^`<]+?)\s*<[^>]*>`__?/g, '$1')
      .replace(/`([^`]+)`__?/g, '$1')
      // [text](url) (Markdown links)
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      // **strong**, *emphasis*
      .replace(/\*\*([^*\n]+)\*\*/g, '$1')
      .replace(/(^|[\s("'])\*(?!\s)((?:\\\*|[^*\n])+?)\*(?=$|[\s).,;:!?'"])/g, '$1$2')
      .replace(/\\([*_`\\])/g, '$1')
  );
}

const ABBREVIATION = /\b(e\.g|i\.e|etc|vs|cf|approx|Mr|Mrs|Dr|No)\.$/i;

/** Sentences of one paragraph (already one line): not split inside code spans or after abbreviations. */
export function splitSentences(paragraph: string): string[] {
  const spans: string[] = [];
  const masked = paragraph.replace(/`[^`]*`/g, (span) => `\uE000${spans.push(span) - 1}\uE000`);
  const out: string[] = [];
  let current = '';
  // A capital (or a number, a quote, code) after the full stop starts a sentence; after two spaces (the
  // way reStructuredText sources end sentences) so does a lower-case word (a parameter's name).
  for (const piece of masked.split(
    /(?<=[.!?]["')\]]*)(?:\s+(?=[\p{Lu}\p{N}"'(\uE000*])|\s{2,}(?=\p{Ll}))/u,
  )) {
    current = current ? `${current} ${piece}` : piece;
    if (ABBREVIATION.test(current)) continue;
    out.push(current);
    current = '';
  }
  if (current) out.push(current);
  return out
    .map((s) =>
      s
        .replace(/\uE000(\d+)\uE000/g, (_, i: string) => spans[Number(i)]!)
        .replace(/\s+/g, ' ')
        .trim(),
    )
    .filter((s) => /[\p{L}\p{N}]/u.test(s));
}

/**
 * Code that reached the prose (a chunk that starts inside a code block, an unmarked example): brackets,
 * braces, quotes and assignments outside code spans (more than one character in seven), or a statement.
 */
const CODE_SYMBOLS = 0.15;

export function looksLikeCode(sentence: string): boolean {
  const outside = sentence.replace(/`[^`]*`/g, '');
  const symbols = (outside.match(/[=(){}[\];|\\"]/g) ?? []).length;
  if (outside.length > 0 && symbols / outside.length > CODE_SYMBOLS) return true;
  // A statement: an assignment or a call at the start, and no full stop at the end.
  return /^[a-z_][\w.]*\s*([-+*/]?=[^=]|\()/.test(sentence) && !/[.!?:]$/.test(sentence);
}

const indentOf = (line: string) => line.length - line.trimStart().length;
const TERMINAL = /[.!?:]["')\]]*$/;

/** Wrapped lines are one paragraph; a short line followed by a capitalised one (a title, a list) is not. */
function continues(previous: string, next: string): boolean {
  if (TERMINAL.test(previous)) return false;
  if (/^([-*+•]|\d+[.)]|\d+(\.\d+)+\.?)\s/.test(next)) return false;
  return !/^\p{Lu}/u.test(next) || previous.length >= 50 || /[,;(]$/.test(previous);
}

/** A long signature is cut after its first arguments: an answer names the call, the reference lists its options. */
function shortSignature(signature: string): string {
  const flat = signature
    .replace(/\s*\\\s*/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  if (flat.length <= 80) return flat;
  const cut = flat.lastIndexOf(',', 60);
  return cut > flat.indexOf('(') ? `${flat.slice(0, cut)}, …)` : flat;
}

/** A declared name with its class (a member declared inside the class's directive) or module. */
function qualify(signature: string, module: string | null, directive: string, owner: string | null): string {
  if (!/^[A-Za-z_]\w*(\(|\s|$)/.test(signature)) return signature;
  if (owner) return `${owner}.${signature}`;
  const memberOfClass = /method|attribute|property/.test(directive);
  return module && !memberOfClass ? `${module}.${signature}` : signature;
}

/** A sentence shown with the signature it describes. */
export function withSignature(text: string, signature: string | null): string {
  return signature ? `\`${signature}\`: ${text}` : text;
}

/**
 * The passages of a text (a whole document or one of its chunks). `title` is the document's: a page
 * titled after its module ("math --- Mathematical functions") names the functions of a chunk that does
 * not carry the page's module directive.
 */
export function passages(text: string, title = ''): Passage[] {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const out: Passage[] = [];
  let heading: string | null = null;
  let module: string | null = MODULE_TITLE.exec(cleanInline(title).trim())?.[1] ?? null;
  let signature: string | null = null;
  /** The signature covers the lines indented deeper than this; -1: the next paragraph only. */
  let signatureIndent = -1;
  /** The signature has not described a paragraph yet (plain-text signatures need not indent their text). */
  let signatureFresh = false;
  /** The class whose directive's body the lines are in. */
  let owner: { name: string; indent: number } | null = null;
  let paragraph: string[] = [];
  let fence: string | null = null;
  let literalIndent = -1;
  let doctest = false;
  /** In a reStructuredText table (grid or simple), to the blank line: its cells are no sentences. */
  let table: 'grid' | 'simple' | null = null;
  let code: string[] = [];

  const pushHeading = (raw: string) => {
    const text = cleanInline(raw).trim();
    if (!text) return;
    heading = text.replace(/`/g, '');
    signature = null;
    owner = null;
    out.push({ text, heading, isHeading: true, signature: null, module });
  };
  const flush = () => {
    if (!paragraph.length) return;
    let joined = paragraph[0]!;
    for (const line of paragraph.slice(1)) joined += continues(joined, line) ? ` ${line}` : `\n${line}`;
    paragraph = [];
    const blocks = joined.split('\n');
    // A paragraph going on with a lower-case word after one that stopped mid-sentence is its rest: a
    // blank line came inside the sentence (where the chunks of a document were put back together).
    const previous = out.at(-1);
    if (
      previous &&
      !previous.isHeading &&
      previous.signature === signature &&
      !/[.!?:`]["')\]]*$/.test(previous.text) &&
      // (not a title-like line, which has no full stop either)
      (previous.text.match(/[\p{L}\p{N}]+/gu) ?? []).length >= 6 &&
      /^\p{Ll}/u.test(cleanInline(blocks[0]!).trim())
    ) {
      out.pop();
      blocks[0] = `${previous.text} ${blocks[0]}`;
    }
    for (const block of blocks) {
      // Two spaces are kept: they end a sentence.
      const clean = cleanInline(block)
        .replace(/\s+/g, (space) => (space.length > 1 ? '  ' : ' '))
        .trim();
      // A paragraph that is one question (a FAQ entry written without heading markup) heads what follows.
      if (/\?$/.test(clean) && splitSentences(clean).length === 1 && !signature) {
        pushHeading(clean);
        continue;
      }
      for (const sentence of splitSentences(clean))
        if (!looksLikeCode(sentence))
          out.push({ text: sentence, heading, isHeading: false, signature, module });
    }
    signatureFresh = false;
    if (signatureIndent < 0) signature = null;
  };
  const flushCode = () => {
    const first = code.find((l) => l.trim());
    code = [];
    const previous = out.at(-1);
    if (!first || !previous || previous.isHeading || !previous.text.endsWith(':')) return;
    const line = first.trim().replace(/^(>>>|\$|\.\.\.)\s*/, '');
    if (line.length <= 160) previous.text = `${previous.text} \`${line}\``;
  };

  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!.replace(/\t/g, '    ').trimEnd();
    const line = raw.trim();
    const indent = indentOf(raw);
    if (fence) {
      if (line.startsWith(fence)) {
        fence = null;
        flushCode();
      } else code.push(line);
      continue;
    }
    if (doctest) {
      if (line) {
        code.push(line);
        continue;
      }
      doctest = false;
      flushCode();
    }
    if (table) {
      if (line) continue;
      table = null;
    }
    if (/^\+[-=]+\+([-=]+\+)*$/.test(line)) {
      flush();
      table = 'grid';
      continue;
    }
    if (/^=+( +=+)+$/.test(line)) {
      flush();
      // A border followed by a blank line closes a table (one whose start is in another chunk).
      if (lines[i + 1]?.trim()) table = 'simple';
      continue;
    }
    if (literalIndent >= 0) {
      if (!line) continue;
      if (indent > literalIndent) {
        code.push(line);
        continue;
      }
      literalIndent = -1;
      flushCode();
    }
    const opening = /^(```|~~~)/.exec(line);
    if (opening) {
      flush();
      fence = opening[1]!;
      continue;
    }
    if (!line) {
      flush();
      continue;
    }
    // A line at or left of a directive's own indentation ends its body.
    if (!paragraph.length && !signatureFresh) {
      if (signature && signatureIndent >= 0 && indent <= signatureIndent) signature = null;
      if (owner && indent <= owner.indent) owner = null;
    }
    // reStructuredText over- and underlines: the line above is a heading.
    if (/^([=\-~^"'`#*+.:_])\1{2,}$/.test(line)) {
      // A module's page is titled ":mod:`json` --- …" (before or without a module directive).
      module ??= /^:mod:`!?([\w.]+)`/.exec(paragraph[0] ?? '')?.[1] ?? null;
      if (paragraph.length === 1) pushHeading(paragraph.pop()!);
      else flush();
      continue;
    }
    const markdownHeading = /^#{1,6}\s+(.*?)\s*#*$/.exec(line);
    if (markdownHeading) {
      flush();
      pushHeading(markdownHeading[1]!);
      continue;
    }
    const directive = /^\.\.\s+([\w:-]+)::\s*(.*)$/.exec(line);
    if (directive) {
      flush();
      const [, name, argument] = directive as unknown as [string, string, string];
      if (name === 'module' || name === 'currentmodule' || name === 'py:module')
        module = argument.trim() || null;
      else if (CODE_DIRECTIVE.test(name)) literalIndent = indent;
      else if (SIGNATURE_DIRECTIVE.test(name) && argument.trim()) {
        // A signature continued over several lines (ending in "\\"); further signatures and options
        // up to the blank line are not prose.
        let declared = argument.trim();
        while (declared.endsWith('\\') && i + 1 < lines.length && lines[i + 1]!.trim())
          declared = `${declared.slice(0, -1).trimEnd()} ${lines[++i]!.trim()}`;
        while (i + 1 < lines.length && lines[i + 1]!.trim()) i++;
        const kind = name.replace(/^py:/, '');
        signature = shortSignature(qualify(declared, module, kind, owner?.name ?? null));
        signatureIndent = indent;
        signatureFresh = false;
        if (kind === 'class' || kind === 'exception')
          owner = { name: signature.replace(/\(.*$/, '').trim(), indent };
      }
      continue;
    }
    if (/^\.\.(\s|$)/.test(line)) {
      flush();
      continue;
    }
    // Directive options (":synopsis: …") and field lists carry no answer.
    if (!paragraph.length && /^:[\w -]+:(\s|$)/.test(line)) continue;
    // A Markdown definition list: "`list.count(x)`" then ": Return the number of times …".
    const definition = /^:\s+(.*)$/.exec(line);
    if (definition && paragraph.length === 1 && /^`[^`]+`$/.test(paragraph[0]!)) {
      signature = paragraph.pop()!.slice(1, -1);
      signatureIndent = indent;
      paragraph.push(definition[1]!);
      continue;
    }
    // Interactive sessions (">>> …" and their output, to the blank line) are code.
    if (/^(>>>|\.\.\.)(\s|$)/.test(line)) {
      flush();
      doctest = true;
      code.push(line);
      continue;
    }
    if (/^([-*+•]|\d+[.)])\s/.test(line)) flush();
    // A signature on its own line (documentation rendered as text).
    if (SIGNATURE_LINE.test(line) && !/["{}]/.test(line) && !paragraph.length) {
      signature = line;
      signatureIndent = -1;
      signatureFresh = true;
      continue;
    }
    if (signature && signatureFresh && !paragraph.length && SIGNATURE_LINE.test(line)) continue;
    if (line.endsWith('::')) {
      paragraph.push(line.replace(/\s*::$/, line === '::' ? '' : ':'));
      flush();
      literalIndent = indent;
      continue;
    }
    paragraph.push(line);
  }
  flush();
  flushCode();
  return out;
}

/**
 * The sentences of a document for the built-in answerer, read through its markup: Markdown and
 * reStructuredText headings, directives, roles, code spans and code blocks; plain text as well.
 * Paragraphs wrapped over several lines are joined before they are split into sentences, so no sentence
 * starts in the middle; a signature (`.. function:: gcd(*integers)`, a Markdown definition term, a plain
 * `math.gcd(*integers)` line) stays with the first sentence that describes it, and a sentence ending in
 * ":" keeps the first line of the code block that follows.
 */
export interface Passage {
  text: string;
  /** The heading of the section the sentence is in (a Markdown or reStructuredText heading, a FAQ question). */
  heading: string | null;
  /** A heading itself: context for the sentences after it, never an answer. */
  isHeading: boolean;
}

const SIGNATURE_DIRECTIVE =
  /^(py:)?(function|method|class|classmethod|staticmethod|exception|attribute|data|decorator|property|coroutinefunction|coroutinemethod|abstractmethod)$/;
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

/** The signature of a directive, qualified by the current module when it names a bare function or class. */
function qualify(signature: string, module: string | null, directive: string): string {
  const bare = /^[A-Za-z_]\w*(\(|$)/.test(signature);
  const memberOfClass = /method|attribute|property/.test(directive);
  return module && bare && !memberOfClass ? `${module}.${signature}` : signature;
}

const ABBREVIATION = /\b(e\.g|i\.e|etc|vs|cf|approx|Mr|Mrs|Dr|No)\.$/i;

/** Sentences of one paragraph (already one line): not split inside code spans or after abbreviations. */
export function splitSentences(paragraph: string): string[] {
  const spans: string[] = [];
  const masked = paragraph.replace(/`[^`]*`/g, (span) => `\uE000${spans.push(span) - 1}\uE000`);
  const out: string[] = [];
  let current = '';
  for (const piece of masked.split(/(?<=[.!?]["')\]]*)\s+(?=[\p{Lu}\p{N}"'(\uE000*])/u)) {
    current = current ? `${current} ${piece}` : piece;
    if (ABBREVIATION.test(current)) continue;
    out.push(current);
    current = '';
  }
  if (current) out.push(current);
  return out
    .map((s) => s.replace(/\uE000(\d+)\uE000/g, (_, i: string) => spans[Number(i)]!).trim())
    .filter((s) => /[\p{L}\p{N}]/u.test(s));
}

const indentOf = (line: string) => line.length - line.trimStart().length;
const TERMINAL = /[.!?:]["')\]]*$/;

/** Wrapped lines are one paragraph; a short line followed by a capitalised one (a title, a list) is not. */
function continues(previous: string, next: string): boolean {
  if (TERMINAL.test(previous)) return false;
  if (/^([-*+•]|\d+[.)]|\d+(\.\d+)+\.?)\s/.test(next)) return false;
  return !/^\p{Lu}/u.test(next) || previous.length >= 50 || /[,;(]$/.test(previous);
}

export function passages(text: string): Passage[] {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const out: Passage[] = [];
  let heading: string | null = null;
  let module: string | null = null;
  let signature: string | null = null;
  let paragraph: string[] = [];
  let fence: string | null = null;
  let literalIndent = -1;
  let code: string[] = [];

  const pushHeading = (raw: string) => {
    const text = cleanInline(raw).trim();
    if (!text) return;
    heading = text.replace(/`/g, '');
    out.push({ text, heading, isHeading: true });
  };
  const flush = () => {
    if (!paragraph.length) return;
    let joined = paragraph[0]!;
    for (const line of paragraph.slice(1)) joined += continues(joined, line) ? ` ${line}` : `\n${line}`;
    paragraph = [];
    for (const block of joined.split('\n')) {
      const clean = cleanInline(block).replace(/\s+/g, ' ').trim();
      // A paragraph that is one question (a FAQ entry written without heading markup) heads what follows.
      if (/\?$/.test(clean) && splitSentences(clean).length === 1 && !signature) {
        pushHeading(clean);
        continue;
      }
      for (let sentence of splitSentences(clean)) {
        if (signature) {
          sentence = `\`${signature}\`: ${sentence}`;
          signature = null;
        }
        out.push({ text: sentence, heading, isHeading: false });
      }
    }
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
    if (fence) {
      if (line.startsWith(fence)) {
        fence = null;
        flushCode();
      } else code.push(line);
      continue;
    }
    if (literalIndent >= 0) {
      if (!line) continue;
      if (indentOf(raw) > literalIndent) {
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
      else if (SIGNATURE_DIRECTIVE.test(name) && argument.trim())
        signature = qualify(argument.trim(), module, name);
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
      paragraph.push(definition[1]!);
      continue;
    }
    if (/^([-*+•]|\d+[.)])\s/.test(line)) flush();
    // A signature on its own line (documentation rendered as text).
    if (SIGNATURE_LINE.test(line) && !paragraph.length) {
      signature = line;
      continue;
    }
    if (signature && !paragraph.length && SIGNATURE_LINE.test(line)) continue;
    if (line.endsWith('::')) {
      paragraph.push(line.replace(/\s*::$/, line === '::' ? '' : ':'));
      flush();
      literalIndent = indentOf(raw);
      continue;
    }
    paragraph.push(line);
  }
  flush();
  flushCode();
  return out;
}

import type { Actor } from '../auth/roles.ts';
import * as chatService from '../chat/chat.service.ts';
import type { ChatDeps } from '../chat/service/sessions.ts';
import { findDocumentStates } from '../documents/documents.repository.ts';
import { AppError } from '../errors.ts';
import * as searchService from '../search/search.service.ts';
import {
  type ChatMetrics,
  type EvaluationInput,
  type EvaluationReport,
  GoldenCase,
  type QuestionResult,
  type SearchMetrics,
} from './evaluation.schemas.ts';

/**
 * What an evaluation asks: admin search (document ids, best first) and, optionally, a chat answer (the
 * cited document ids in citation order). `kas eval` implements it over HTTP, the admin endpoint with the
 * services behind the same API paths, so both measure what users get.
 */
export interface EvaluationTarget {
  search(question: string): Promise<string[]>;
  ask?(question: string, personaId: number): Promise<ChatAnswer>;
  /** The ids among these that no indexed document has. */
  missingDocuments?(ids: string[]): Promise<string[]>;
}

/** A chat answer as evaluation scores it: its text and the cited document ids in citation order. */
export interface ChatAnswer {
  answer: string;
  cited: string[];
}

/** Whether an answer contains the expected text (any one of a list), ignoring case and spacing. */
export function answerContains(answer: string, expected: string | string[]): boolean {
  const flat = (text: string) => text.toLowerCase().replace(/\s+/g, ' ');
  const haystack = flat(answer);
  return (Array.isArray(expected) ? expected : [expected]).some((e) => haystack.includes(flat(e)));
}

/** Reads a golden set: one JSON object per line, `{question, document_ids}`; blank lines and `#` comments skipped. */
export function parseGoldenSet(text: string): GoldenCase[] {
  const cases: GoldenCase[] = [];
  const problems: string[] = [];
  text.split('\n').forEach((line, i) => {
    const trimmed = line.trim();
    if (!trimmed || trimmed.startsWith('#')) return;
    let value: unknown;
    try {
      value = JSON.parse(trimmed);
    } catch {
      problems.push(`line ${i + 1}: not JSON`);
      return;
    }
    const parsed = GoldenCase.safeParse(value);
    if (parsed.success) cases.push(parsed.data);
    else
      problems.push(
        `line ${i + 1}: expected {"question": string, "document_ids": [string, ...], "answer_contains"?: string or [string, ...]}`,
      );
  });
  if (problems.length)
    throw new AppError('VALIDATION_ERROR', `Invalid golden set: ${problems.slice(0, 5).join('; ')}`);
  if (!cases.length) throw new AppError('VALIDATION_ERROR', 'The golden set has no questions');
  return cases;
}

/** 1-based rank of the first expected id, or null. */
function firstRank(ranked: string[], expected: Set<string>): number | null {
  const at = ranked.findIndex((id) => expected.has(id));
  return at < 0 ? null : at + 1;
}

function ndcgAt10(ranked: string[], expected: Set<string>): number {
  let dcg = 0;
  ranked.slice(0, 10).forEach((id, i) => {
    if (expected.has(id)) dcg += 1 / Math.log2(i + 2);
  });
  let ideal = 0;
  for (let i = 0; i < Math.min(10, expected.size); i++) ideal += 1 / Math.log2(i + 2);
  return ideal ? dcg / ideal : 0;
}

const round = (value: number) => Math.round(value * 1000) / 1000;

export function searchMetrics(rankings: { ranked: string[]; expected: Set<string> }[]): SearchMetrics {
  const n = rankings.length || 1;
  const share = (k: number) =>
    rankings.filter((r) => {
      const rank = firstRank(r.ranked, r.expected);
      return rank !== null && rank <= k;
    }).length / n;
  let mrr = 0;
  let ndcg = 0;
  for (const r of rankings) {
    const rank = firstRank(r.ranked, r.expected);
    if (rank !== null && rank <= 10) mrr += 1 / rank;
    ndcg += ndcgAt10(r.ranked, r.expected);
  }
  return {
    recall_at_1: round(share(1)),
    recall_at_5: round(share(5)),
    recall_at_10: round(share(10)),
    mrr_at_10: round(mrr / n),
    ndcg_at_10: round(ndcg / n),
  };
}

export function chatMetrics(
  answers: { cited: string[] | null; expected: Set<string>; contains?: boolean | null }[],
): ChatMetrics {
  const answered = answers.filter((a) => a.cited !== null);
  const n = answers.length || 1;
  const checked = answers.filter((a) => a.contains !== undefined && a.contains !== null);
  return {
    cites_expected: round(answered.filter((a) => a.cited!.some((id) => a.expected.has(id))).length / n),
    first_citation_expected: round(
      answered.filter((a) => a.cited!.length > 0 && a.expected.has(a.cited![0]!)).length / n,
    ),
    failed: answers.length - answered.length,
    answer_contains: checked.length ? round(checked.filter((a) => a.contains).length / checked.length) : null,
  };
}

/** Runs every question through the target; `onProgress` after each one. */
export async function runEvaluation({
  cases,
  target,
  chat,
  personaId = 0,
  onProgress,
}: {
  cases: GoldenCase[];
  target: EvaluationTarget;
  chat: boolean;
  personaId?: number;
  onProgress?: (done: number, total: number) => void;
}): Promise<EvaluationReport> {
  const results: QuestionResult[] = [];
  const rankings: { ranked: string[]; expected: Set<string> }[] = [];
  const answers: { cited: string[] | null; expected: Set<string>; contains: boolean | null }[] = [];
  for (const [i, golden] of cases.entries()) {
    const expected = new Set(golden.document_ids);
    const ranked = await target.search(golden.question);
    rankings.push({ ranked, expected });
    let answer: ChatAnswer | null = null;
    let contains: boolean | null = null;
    if (chat && target.ask) {
      try {
        answer = await target.ask(golden.question, personaId);
      } catch {
        answer = null;
      }
      if (golden.answer_contains !== undefined)
        contains = answer !== null && answerContains(answer.answer, golden.answer_contains);
      answers.push({ cited: answer?.cited ?? null, expected, contains });
    }
    results.push({
      question: golden.question,
      first_expected_rank: firstRank(ranked, expected),
      top_documents: ranked.slice(0, 5),
      cited_documents: answer?.cited ?? null,
      answer: answer?.answer ?? null,
      answer_contains_expected: contains,
    });
    onProgress?.(i + 1, cases.length);
  }
  const ids = [...new Set(cases.flatMap((c) => c.document_ids))];
  return {
    questions: cases.length,
    search: searchMetrics(rankings),
    chat: chat && target.ask ? chatMetrics(answers) : null,
    missing_document_ids: target.missingDocuments ? (await target.missingDocuments(ids)).sort() : [],
    results,
  };
}

/** The admin endpoint: the same evaluation through the services that serve admin search and chat. */
export async function evaluate({
  ctx,
  input,
}: {
  ctx: ChatDeps & { actor: Actor };
  input: EvaluationInput;
}): Promise<EvaluationReport> {
  const target: EvaluationTarget = {
    search: async (question) => {
      const { documents } = await searchService.adminSearch({
        ctx,
        input: { query: question, filters: {} },
      });
      return documents.map((d) => d.document_id);
    },
    ask: async (question, personaId) => {
      const answer = await chatService.sendMessage({
        ctx,
        input: {
          message: question,
          chat_session_info: { persona_id: personaId, description: 'evaluation' },
          stream: false,
          parent_message_id: -1,
          include_citations: true,
          file_descriptors: [],
          deep_research: false,
        },
      });
      await chatService.deleteSession({
        ctx,
        input: { session_id: answer.chat_session_id, hard_delete: true },
      });
      if (answer.error_msg) throw new AppError('SERVICE_UNAVAILABLE', answer.error_msg);
      return { answer: answer.answer, cited: citedDocuments(answer.citation_info) };
    },
    missingDocuments: async (ids) => {
      const found = await findDocumentStates(ctx.db, ids);
      return ids.filter((id) => !found.has(id));
    },
  };
  return runEvaluation({ cases: input.cases, target, chat: input.chat, personaId: input.persona_id });
}

/** Cited document ids in citation-number order, each once. */
export function citedDocuments(citations: { citation_number: number; document_id: string }[]): string[] {
  return [
    ...new Set(
      [...citations].sort((a, b) => a.citation_number - b.citation_number).map((c) => c.document_id),
    ),
  ];
}

/** The report as the CLI prints it. */
export function formatReport(report: EvaluationReport): string {
  const s = report.search;
  const lines = [
    `questions        ${report.questions}`,
    `admin search     recall@1 ${s.recall_at_1}  recall@5 ${s.recall_at_5}  recall@10 ${s.recall_at_10}  MRR@10 ${s.mrr_at_10}  nDCG@10 ${s.ndcg_at_10}`,
  ];
  if (report.chat) {
    lines.push(
      `chat             cites an expected document ${report.chat.cites_expected}  citation [1] expected ${report.chat.first_citation_expected}  failed ${report.chat.failed}`,
    );
    if (report.chat.answer_contains !== null)
      lines.push(`answers          contain the expected text ${report.chat.answer_contains}`);
  }
  if (report.missing_document_ids.length) {
    lines.push(
      '',
      `expected document ids that no indexed document has (misspelt, or not indexed): ${report.missing_document_ids.join(', ')}`,
    );
  }
  const wrong = report.results.filter((r) => r.answer_contains_expected === false);
  if (wrong.length) {
    lines.push('', 'answers without the expected text:');
    for (const r of wrong) lines.push(`  ${r.question}  →  ${(r.answer ?? '(failed)').slice(0, 160)}`);
  }
  const missed = report.results.filter((r) => r.first_expected_rank === null || r.first_expected_rank > 5);
  if (missed.length) {
    lines.push('', 'not in the top 5 of admin search:');
    for (const r of missed)
      lines.push(`  ${r.question}  →  ${r.top_documents.slice(0, 3).join(', ') || '(nothing)'}`);
  }
  return lines.join('\n');
}

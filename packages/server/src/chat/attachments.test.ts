import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlmServer, fakeOpenAiEnv, startFakeOpenAi } from '../../../../test/fakes/openai.ts';
import type { RuntimeFixture } from '../testing/runtime-fixture.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { attachmentsFor } from './attachments.ts';

const NEEDLE = 'The launch code for Project Heron is 7421-ALPHA.';

/** About `bytes` of prose about other things, with the needle in the middle. */
function longReport(bytes: number): string {
  const topics = ['harbour', 'orchard', 'glacier', 'library', 'railway', 'meadow', 'foundry', 'lighthouse'];
  const paragraphs: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const topic = topics[i % topics.length]!;
    const paragraph = `Section ${i}. The ${topic} committee met on day ${i} and reviewed the ${topic} maintenance schedule. Nothing else was decided about the ${topic}.\n\n`;
    paragraphs.push(paragraph);
    size += paragraph.length;
  }
  paragraphs.splice(paragraphs.length >> 1, 0, `${NEEDLE}\n\n`);
  return paragraphs.join('');
}

async function upload(t: RuntimeFixture, key: string, name: string, text: string) {
  const { files } = await t.caller(key).files.upload({
    files: [{ name, content_type: 'text/plain', data: new TextEncoder().encode(text) }],
  });
  return files;
}

describe('long attachments with the built-in answerer', () => {
  const t = useTestRuntime();

  it('answers a question about a 2 MB attachment from its relevant part (no 422, no echo)', async () => {
    const user = await t.createKey('limited', 'reader');
    const files = await upload(t, user.key, 'report.txt', longReport(2 * 1024 * 1024));
    const response = await t.caller(user.key).chat.sendMessage({
      message: 'What is the launch code for Project Heron?',
      chat_session_info: {},
      stream: false,
      file_descriptors: files,
    });
    expect(response.answer).toContain('7421-ALPHA');
    expect(response.answer.length).toBeLessThan(2000);
  });

  it('never repeats a 2 MB attachment as its answer (which failed with a 422: too large to be indexed)', async () => {
    const user = await t.createKey('limited', 'echo');
    // One "sentence" of distinct words: its text search vector alone is over the 1 MB limit.
    const oneLine = `payload ${Array.from({ length: 270_000 }, (_, i) => `w${i.toString(36)}x`).join(' ')}`;
    const files = await upload(t, user.key, 'blob.txt', oneLine);
    const response = await t.caller(user.key).chat.sendMessage({
      message: 'What does the payload say?',
      chat_session_info: {},
      stream: false,
      file_descriptors: files,
    });
    expect(response.answer.length).toBeLessThan(20_000);
    const session = await t.caller(user.key).chat.getSession({ session_id: response.chat_session_id });
    expect(JSON.stringify(session).length).toBeLessThan(100_000);
  });
});

describe('long attachments with a model', () => {
  let llm: FakeLlmServer;
  beforeAll(async () => {
    llm = await startFakeOpenAi();
  });
  afterAll(async () => {
    await llm?.close();
  });
  const t = useTestRuntime(() => ({ ...fakeOpenAiEnv(llm), KAS_LLM_CONTEXT_TOKENS: '16000' }));

  it('sends the model the best chunks of a long attachment, within half its window', async () => {
    const user = await t.createKey('limited', 'modeller');
    const files = await upload(t, user.key, 'report.txt', longReport(1024 * 1024));
    await t.caller(user.key).chat.sendMessage({
      message: 'What is the launch code for Project Heron?',
      chat_session_info: {},
      stream: false,
      file_descriptors: files,
    });
    const prompt = JSON.stringify(llm.requests.at(-1)!.messages);
    expect(prompt).toContain(NEEDLE);
    expect(prompt).toContain('only the parts most relevant to the question');
    // 8,000 tokens of attachment at most: far below the file's megabyte.
    expect(prompt.length).toBeLessThan(60_000);
  });

  it('gives short attachments whole', async () => {
    const user = await t.createKey('limited', 'short');
    const files = await upload(t, user.key, 'note.txt', `A short note. ${NEEDLE}`);
    await t.caller(user.key).chat.sendMessage({
      message: 'What does the note say?',
      chat_session_info: {},
      stream: false,
      file_descriptors: files,
    });
    const prompt = JSON.stringify(llm.requests.at(-1)!.messages);
    expect(prompt).toContain(`A short note. ${NEEDLE}`);
    expect(prompt).not.toContain('only the parts most relevant');
  });
});

describe('attachmentsFor', () => {
  it('keeps files that fit whole and ranks the chunks of long ones, in file order', () => {
    const small = { name: 'a.txt', text: 'short' };
    expect(attachmentsFor('anything', [small], 1000)).toEqual([small]);
    const [long] = attachmentsFor('launch code Heron', [{ name: 'r.txt', text: longReport(200_000) }], 1500);
    expect(long!.text).toContain(NEEDLE);
    expect(long!.text.length).toBeLessThan(1500 * 8);
  });
});

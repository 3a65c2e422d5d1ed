/**
 * Ingests a document, asks about it with a streamed answer (REST NDJSON and tRPC), asks a follow-up with
 * the whole answer at once, and prints the cited answers.
 * Usage: KAS_URL=http://127.0.0.1:8080 KAS_API_KEY=<admin key> npm run -s example -- chat
 * Exits non-zero on any mismatch. Works with the built-in offline answerer (no LLM configured).
 */
import { collectAnswer, createKasClient, isPacket } from '@kas/sdk';

const baseUrl = process.env.KAS_URL ?? 'http://127.0.0.1:8080';
const apiKey = process.env.KAS_API_KEY;
if (!apiKey) {
  console.error('Set KAS_API_KEY to an admin key.');
  process.exit(2);
}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) {
    console.error(`MISMATCH: ${message}`);
    process.exit(1);
  }
}

const kas = createKasClient({ baseUrl, apiKey });
const documentId = 'example-onboarding';
await kas.documents.ingest({
  id: documentId,
  semantic_identifier: 'Onboarding guide',
  sections: [
    {
      text: 'New employees receive their laptop on the first day from the IT desk on the second floor. The welcome lunch takes place every Monday at noon.',
      link: 'https://intranet.example/onboarding#first-day',
    },
  ],
});

// Streamed over the REST NDJSON route, packet by packet.
const session = await kas.chat.createSession({ description: 'SDK example' });
let printed = '';
const types = new Set<string>();
const streamed = await collectAnswer(
  (async function* () {
    for await (const line of kas.chat.stream({
      chat_session_id: session.chat_session_id,
      message: 'Where do new employees get their laptop?',
    })) {
      if (isPacket(line)) {
        types.add(line.obj.type);
        if (line.obj.type === 'message_delta') printed += line.obj.content;
      }
      yield line;
    }
  })(),
);
console.log(`Q: Where do new employees get their laptop?\nA: ${printed}`);
check(!streamed.error, `the stream ended without an error (${streamed.error?.error})`);
check(streamed.stop_reason === null, 'the stream ends with a stop packet');
check(
  ['message_start', 'message_delta', 'citation_info', 'stop'].every((t) => types.has(t)),
  'answer, citation and stop packets arrive',
);
check(
  streamed.citations.some((c) => c.document_id === documentId),
  'the answer cites the onboarding guide',
);
check(/IT desk/.test(streamed.answer), 'the answer comes from the document');

// The same over the tRPC streaming link.
const viaTrpc = await collectAnswer(
  kas.chat.stream(
    { chat_session_id: session.chat_session_id, message: 'When is the welcome lunch?' },
    { transport: 'trpc' },
  ),
);
console.log(`Q: When is the welcome lunch?\nA: ${viaTrpc.answer}`);
check(
  viaTrpc.citations.some((c) => c.document_id === documentId),
  'tRPC streaming cites the document too',
);

// And a whole answer at once.
const full = await kas.chat.send({
  chat_session_id: session.chat_session_id,
  message: 'Which floor is the IT desk on?',
});
console.log(
  `Q: Which floor is the IT desk on?\nA: ${full.answer}\ncitations: ${JSON.stringify(full.citations)}`,
);
check(Object.values(full.citations).includes(documentId), 'the full answer carries its citations');

const history = await kas.chat.getSession(session.chat_session_id);
check(
  history.messages.filter((m) => m.message_type === 'assistant').length === 3,
  'three answers are saved in the session',
);

await kas.chat.deleteSession(session.chat_session_id);
await kas.documents.delete(documentId);
console.log('OK');

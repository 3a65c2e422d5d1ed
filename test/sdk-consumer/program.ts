// A program outside the repository that uses the published SDK: the REST client, the tRPC client
// and chat.stream(). The tarball test type-checks it under strict settings and runs it.
import { ApiError, type ChatStreamLine, createKasClient, type ErrorCode, type Role } from '@kas/sdk';

const baseUrl = process.env.KAS_URL ?? 'http://127.0.0.1:8080';
const kas = createKasClient({ baseUrl, apiKey: process.env.KAS_API_KEY });

const { data: keys, error } = await kas.rest.GET('/api/admin/api-key');
if (error) throw new Error(`REST call failed: ${error.error_code}`);
const firstKeyName: string | null | undefined = keys[0]?.api_key_name;

const me = await kas.trpc.apiKeys.me.query({});
const role: Role = me.role;

const lines: ChatStreamLine[] = [];
for await (const line of kas.chat.stream({ message: 'What is kas?', chat_session_info: {} }))
  lines.push(line);

let code: ErrorCode | 'HTTP_ERROR' | undefined;
try {
  await kas.call((trpc) => trpc.personas.get.query({ persona_id: 987654 }));
} catch (failure) {
  if (failure instanceof ApiError) code = failure.error_code;
}

// Compile-time proof that both clients are typed: each line fails to compile if its value is `any`.
type NotAny<T> = 0 extends 1 & T ? never : true;
const typedRest: NotAny<typeof keys> = true;
const typedTrpc: NotAny<typeof me> = true;
const typedStream: NotAny<ChatStreamLine> = true;
if (!(typedRest && typedTrpc && typedStream)) throw new Error('unreachable');

console.log(JSON.stringify({ keys: keys.length, firstKeyName, role, lines: lines.length, code }));

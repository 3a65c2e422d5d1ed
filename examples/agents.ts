/**
 * Creates an agent, shares it with a group and lists it as a member and as an outsider, through the SDK.
 * Usage: KAS_URL=http://127.0.0.1:8080 KAS_API_KEY=<admin key> npm run -s example -- agents
 * Exits non-zero on any mismatch; cleans up what it created.
 */
import { ApiError, createKasClient } from '@kas/sdk';

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

const admin = createKasClient({ baseUrl, apiKey });
const aliceKey = await admin.apiKeys.create({ name: 'example alice', role: 'basic' });
const bobKey = await admin.apiKeys.create({ name: 'example bob', role: 'basic' });
const alice = createKasClient({ baseUrl, apiKey: aliceKey.api_key });
const bob = createKasClient({ baseUrl, apiKey: bobKey.api_key });

const group = await admin.groups.create({
  name: `example research ${Date.now()}`,
  user_ids: [aliceKey.user_id],
});
console.log(`group ${group.id} "${group.name}" with alice`);

const agent = await admin.agents.create({
  name: 'Research helper',
  description: 'Answers from the research library',
  system_prompt: 'You are a careful research assistant.',
  task_prompt: 'Cite every claim.',
  datetime_aware: true,
  is_public: false,
  groups: [group.id],
  document_set_ids: [],
  tool_ids: [],
  starter_messages: [
    { name: 'Summarise', description: 'Summarise the latest report', message: 'Summarise the latest report' },
  ],
});
check(agent.is_public === false && !agent.builtin_persona, 'the agent is private and not built in');
console.log(`agent ${agent.id} "${agent.name}" shared with group ${group.id}`);

const aliceSees = await alice.agents.listAll();
check(
  aliceSees.some((a) => a.id === agent.id),
  'a group member sees the agent',
);
check(
  aliceSees.some((a) => a.id === 0),
  'everyone sees the default agent',
);
const full = await alice.agents.get(agent.id);
check(full.system_prompt === 'You are a careful research assistant.', 'a member can read the agent');

const bobSees = await bob.agents.listAll();
check(!bobSees.some((a) => a.id === agent.id), 'an outsider does not see the agent');
try {
  await bob.agents.get(agent.id);
  check(false, 'an outsider must not read the agent');
} catch (error) {
  check(
    error instanceof ApiError && error.status === 404,
    'an outsider gets 404, as for an agent that does not exist',
  );
}
try {
  await alice.agents.delete(agent.id);
  check(false, 'a member who is not the owner must not delete the agent');
} catch (error) {
  check(error instanceof ApiError && error.status === 403, 'deleting as a non-owner is 403');
}
console.log(`alice sees ${aliceSees.length} agents, bob sees ${bobSees.length}`);

await admin.agents.delete(agent.id);
check(
  !(await alice.agents.listAll()).some((a) => a.id === agent.id),
  'a deleted agent disappears from lists',
);
await admin.groups.delete(group.id);
await admin.apiKeys.delete(aliceKey.api_key_id);
await admin.apiKeys.delete(bobKey.api_key_id);
console.log('OK');

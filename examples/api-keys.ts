/**
 * Creates, lists, regenerates and deletes an API key through the SDK, checking each step.
 * Usage: KAS_URL=http://127.0.0.1:8080 KAS_API_KEY=svck-… npm run -s example -- api-keys
 * Exits non-zero on any mismatch.
 */
import { ApiError, createKasClient } from '@kas/sdk';

const baseUrl = process.env.KAS_URL ?? 'http://127.0.0.1:8080';
const apiKey = process.env.KAS_API_KEY;
if (!apiKey) {
  console.error('Set KAS_API_KEY to an admin key (printed by the first `npm start`).');
  process.exit(2);
}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) {
    console.error(`MISMATCH: ${message}`);
    process.exit(1);
  }
}

const kas = createKasClient({ baseUrl, apiKey });

const created = await kas.apiKeys.create({ name: 'example robot', role: 'basic' });
check(created.api_key?.startsWith('svck-'), 'create returns the full key once');
check(
  created.api_key_role === 'basic' && created.api_key_name === 'example robot',
  'create echoes name and role',
);
console.log(`created key ${created.api_key_id} (${created.api_key_display})`);

const listed = await kas.apiKeys.list();
const mine = listed.find((k) => k.api_key_id === created.api_key_id);
check(mine, 'the new key is listed');
check(mine.api_key === undefined, 'the list never shows the full key');
check(mine.api_key_display === created.api_key_display, 'the list shows the masked key');
console.log(`listed ${listed.length} keys`);

const robot = createKasClient({ baseUrl, apiKey: created.api_key });
try {
  await robot.apiKeys.list();
  check(false, 'a basic key must not list keys');
} catch (error) {
  check(error instanceof ApiError && error.status === 403, 'a basic key gets 403 INSUFFICIENT_PERMISSIONS');
}

const regenerated = await kas.apiKeys.regenerate(created.api_key_id);
check(regenerated.api_key && regenerated.api_key !== created.api_key, 'regenerate issues a new value');
try {
  await robot.apiKeys.list();
  check(false, 'the old value must stop working');
} catch (error) {
  check(error instanceof ApiError && error.status === 401, 'the old value gets 401 at once');
}
console.log(`regenerated key ${created.api_key_id} (${regenerated.api_key_display})`);

await kas.apiKeys.delete(created.api_key_id);
const after = await kas.apiKeys.list();
check(!after.some((k) => k.api_key_id === created.api_key_id), 'the deleted key is gone');
try {
  await kas.apiKeys.delete(created.api_key_id);
  check(false, 'deleting twice must fail');
} catch (error) {
  check(
    error instanceof ApiError && error.status === 404 && error.error_code === 'API_KEY_NOT_FOUND',
    'a second delete is 404',
  );
}
console.log(`deleted key ${created.api_key_id}`);
console.log('OK');

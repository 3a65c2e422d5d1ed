import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.ts';

describe('configuration', () => {
  it('has sane defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      PORT: 8080,
      HOST: '127.0.0.1',
      KAS_DATA_DIR: './.kas-data',
      KAS_LLM_PROVIDER: 'builtin',
      KAS_HARD_DELETE_CHATS: false,
      KAS_CHAT_HEARTBEAT_MS: 15_000,
      KAS_RATE_LIMIT_PER_MINUTE: 600,
      KAS_LOG_LEVEL: 'info',
    });
    expect(config.DATABASE_URL).toBeUndefined();
  });

  it.each([
    ['PORT', 'eighty'],
    ['KAS_RATE_LIMIT_PER_MINUTE', '-1'],
    ['KAS_LLM_PROVIDER', 'gpt'],
    ['KAS_BOOTSTRAP_ADMIN_KEY', 'not-a-key'],
    ['DATABASE_URL', 'mysql://x'],
    ['KAS_HARD_DELETE_CHATS', 'yes'],
    ['KAS_LLM_BASE_URL', 'not a url'],
  ])('a bad %s stops start-up with a message naming it', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(name));
  });

  it('requires an encryption key with DATABASE_URL', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://localhost/kas' })).toThrow(/KAS_ENCRYPTION_KEY/);
  });
});

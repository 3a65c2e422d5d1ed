import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, unknownSettings } from './config.ts';

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
    ['KAS_TRUST_PROXY', 'yes'],
    ['KAS_TRUST_PROXY', '10.0.0.0/33'],
    ['KAS_TRUST_PROXY', 'proxy.internal'],
  ])('a bad %s stops start-up with a message naming it', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(name));
  });

  it('reads KAS_TRUST_PROXY as express takes it', () => {
    expect(loadConfig({}).KAS_TRUST_PROXY).toBe(false);
    expect(loadConfig({ KAS_TRUST_PROXY: 'true' }).KAS_TRUST_PROXY).toBe(true);
    expect(loadConfig({ KAS_TRUST_PROXY: '2' }).KAS_TRUST_PROXY).toBe(2);
    expect(
      loadConfig({ KAS_TRUST_PROXY: 'loopback, 10.0.0.0/8, 192.168.0.0/255.255.0.0, ::1' }).KAS_TRUST_PROXY,
    ).toBe('loopback, 10.0.0.0/8, 192.168.0.0/255.255.0.0, ::1');
  });

  it('requires an encryption key with DATABASE_URL', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://localhost/kas' })).toThrow(/KAS_ENCRYPTION_KEY/);
  });
});

describe('unknown settings', () => {
  it('names each KAS_* variable that is no setting, with the closest setting', () => {
    expect(
      unknownSettings({
        KAS_LOG_LEVLE: 'debug',
        KAS_SHUTDOWN_GRACE: '30',
        KAS_NOTHING_LIKE_IT: '1',
        KAS_LOG_LEVEL: 'info',
        KAS_URL: 'http://x',
        KAS_TEST_DB: 'pglite',
        PATH: '/bin',
      }),
    ).toEqual([
      { name: 'KAS_LOG_LEVLE', closest: 'KAS_LOG_LEVEL' },
      { name: 'KAS_NOTHING_LIKE_IT', closest: undefined },
      { name: 'KAS_SHUTDOWN_GRACE', closest: 'KAS_SHUTDOWN_GRACE_S' },
    ]);
  });
});

describe('model provider settings', () => {
  it('refuse a provider without a base URL or a key, instead of calling its public API with no key', () => {
    expect(() => loadConfig({ KAS_LLM_PROVIDER: 'openai' })).toThrow(
      /KAS_LLM_API_KEY: required when KAS_LLM_PROVIDER=openai and KAS_LLM_BASE_URL is unset \(that is the public OpenAI API\); for a local server .* set KAS_LLM_BASE_URL/,
    );
    expect(() => loadConfig({ KAS_LLM_PROVIDER: 'anthropic' })).toThrow(/the public Anthropic API/);
    expect(
      loadConfig({ KAS_LLM_PROVIDER: 'openai', KAS_LLM_API_KEY: 'sk-x' }).KAS_LLM_BASE_URL,
    ).toBeUndefined();
    expect(
      loadConfig({ KAS_LLM_PROVIDER: 'openai', KAS_LLM_BASE_URL: 'http://ollama:11434/v1' }),
    ).toBeDefined();
  });
});

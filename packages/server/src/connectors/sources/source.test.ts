import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createSourceRegistry } from './index.ts';
import { type AnySource, validateWith } from './source.ts';

const fake: AnySource = {
  name: 'fake',
  displayName: 'Fake',
  needsCredential: false,
  inputTypes: ['load_state'],
  validateConfig: (raw) => validateWith(z.object({ wiki_base: z.url(), space: z.string().min(1) }), raw),
  validateCredential: (raw) => validateWith(z.object({}), raw),
  async *load() {
    yield { documents: [], checkpoint: null };
  },
};

describe('source registry and validation', () => {
  it('reports every bad or missing key by name', () => {
    const result = fake.validateConfig({ wiki_base: 'not a url' });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems.map((p) => p.key).sort()).toEqual(['space', 'wiki_base']);
    expect(fake.validateConfig({ wiki_base: 'https://x.example', space: 'ENG' })).toEqual({
      ok: true,
      value: { wiki_base: 'https://x.example', space: 'ENG' },
    });
  });

  it('holds sources by name, one registry per app', () => {
    const one = createSourceRegistry([fake]);
    const two = createSourceRegistry();
    expect(one.get('fake')).toBe(fake);
    expect(two.get('fake')).toBeUndefined();
    expect(() => one.register(fake)).toThrow(/twice/);
    expect(one.names()).toContain('fake');
  });
});

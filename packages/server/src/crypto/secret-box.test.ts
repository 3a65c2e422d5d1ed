import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { configFrom } from '../config.ts';
import { createSecretBox, loadEncryptionKey } from './secret-box.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('secret box', () => {
  it('round-trips, uses a fresh IV each time and rejects tampering or another key', () => {
    const box = createSecretBox(Buffer.alloc(32, 1));
    const a = box.encrypt('token-123');
    const b = box.encrypt('token-123');
    expect(a).not.toBe(b);
    expect(a).not.toContain('token-123');
    expect(box.decrypt(a)).toBe('token-123');
    const tampered = `${a.slice(0, -2)}${a.endsWith('A') ? 'B' : 'A'}A`;
    expect(() => box.decrypt(tampered)).toThrow();
    expect(() => createSecretBox(Buffer.alloc(32, 2)).decrypt(a)).toThrow();
  });

  it('generates a key once into the data directory in embedded mode', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kas-key-'));
    dirs.push(dir);
    const config = configFrom({ KAS_DATA_DIR: dir });
    const first = loadEncryptionKey(config);
    expect(first).toHaveLength(32);
    expect(statSync(join(dir, 'encryption.key')).mode & 0o777).toBe(0o600);
    expect(loadEncryptionKey(config).equals(first)).toBe(true);
    expect(readFileSync(join(dir, 'encryption.key'), 'utf8').trim()).toBe(first.toString('base64'));
  });

  it('uses KAS_ENCRYPTION_KEY when set', () => {
    const value = Buffer.alloc(32, 9).toString('base64');
    expect(loadEncryptionKey(configFrom({ KAS_ENCRYPTION_KEY: value })).equals(Buffer.alloc(32, 9))).toBe(
      true,
    );
  });
});

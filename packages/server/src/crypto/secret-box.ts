import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.ts';

const VERSION = 'v1';

/** Encrypts secrets at rest (credentials, tokens) with AES-256-GCM. */
export interface SecretBox {
  encrypt(plaintext: string): string;
  /** Throws when the value was not produced with this key or was tampered with. */
  decrypt(ciphertext: string): string;
}

export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error('The encryption key must be 32 bytes');
  return {
    encrypt(plaintext) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return [
        VERSION,
        iv.toString('base64url'),
        cipher.getAuthTag().toString('base64url'),
        body.toString('base64url'),
      ].join(':');
    },
    decrypt(ciphertext) {
      const [version, iv, tag, body] = ciphertext.split(':');
      if (version !== VERSION || !iv || !tag || body === undefined) throw new Error('Not an encrypted value');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString(
        'utf8',
      );
    },
  };
}

/** A key as KAS_ENCRYPTION_KEY and `encryption.key` hold it: 32 bytes, base64 (or base64url). */
export function decodeKey(value: string): Buffer {
  const key = Buffer.from(value.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (key.length !== 32) throw new Error('KAS_ENCRYPTION_KEY must decode to exactly 32 bytes');
  return key;
}

/**
 * The key from KAS_ENCRYPTION_KEY; in embedded mode without one, a key generated once into the data
 * directory (readable by its owner only) so that `npm start` needs no setup.
 */
export function loadEncryptionKey(config: Config, options: { inMemory?: boolean } = {}): Buffer {
  if (config.KAS_ENCRYPTION_KEY) return decodeKey(config.KAS_ENCRYPTION_KEY);
  if (options.inMemory) return randomBytes(32);
  const path = join(config.KAS_DATA_DIR, 'encryption.key');
  if (existsSync(path)) return decodeKey(readFileSync(path, 'utf8').trim());
  mkdirSync(config.KAS_DATA_DIR, { recursive: true });
  const key = randomBytes(32);
  writeFileSync(path, `${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(path, 0o600);
  return key;
}

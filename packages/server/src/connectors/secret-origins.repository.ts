import type { DbExecutor } from '../db/database.ts';

/** Where a credential's secrets may be sent, and who may bind them while they are not bound yet. */
export interface SecretBinding {
  /** Origins the secrets are bound to; null: not bound yet. */
  secret_origins: string[] | null;
  secrets_entered_by: string | null;
}

export async function findBinding(db: DbExecutor, credentialId: number): Promise<SecretBinding | undefined> {
  return db
    .selectFrom('credentials')
    .select(['secret_origins', 'secrets_entered_by'])
    .where('id', '=', credentialId)
    .executeTakeFirst();
}

/** Binds the secrets to these origins. */
export async function bind(db: DbExecutor, credentialId: number, origins: string[]): Promise<void> {
  await db
    .updateTable('credentials')
    .set({ secret_origins: JSON.stringify(origins) })
    .where('id', '=', credentialId)
    .execute();
}

/** The secrets were just entered by this user: unbound, until the user links them to where they go. */
export async function enteredBy(db: DbExecutor, credentialId: number, userId: string | null): Promise<void> {
  await db
    .updateTable('credentials')
    .set({ secret_origins: null, secrets_entered_by: userId })
    .where('id', '=', credentialId)
    .execute();
}

import type { DbExecutor } from '../db/database.ts';
import type { OauthClientRow, OauthCodeRow } from './oauth-server.table.ts';

export function insertClient(
  db: DbExecutor,
  row: {
    client_id: string;
    client_secret_encrypted: string | null;
    client_secret_expires_at: Date | null;
    client_name: string | null;
    redirect_uris: string[];
    metadata: Record<string, unknown>;
  },
) {
  return db
    .insertInto('oauth_clients')
    .values({ ...row, metadata: JSON.stringify(row.metadata) })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * Clients registered before `before` that no person approved and that hold no pending code: anyone may
 * register, so unused registrations are not kept.
 */
export function deleteUnusedClients(db: DbExecutor, before: Date) {
  return db
    .deleteFrom('oauth_clients as c')
    .where('c.created_at', '<', before)
    .where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('oauth_grants as g').select('g.id').whereRef('g.client_id', '=', 'c.client_id'))),
    )
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('oauth_codes as k').select('k.code_hash').whereRef('k.client_id', '=', 'c.client_id'),
        ),
      ),
    )
    .execute();
}

export function findClient(db: DbExecutor, clientId: string): Promise<OauthClientRow | undefined> {
  return db.selectFrom('oauth_clients').selectAll().where('client_id', '=', clientId).executeTakeFirst();
}

export async function insertCode(db: DbExecutor, row: Omit<OauthCodeRow, 'created_at'>): Promise<void> {
  await db.insertInto('oauth_codes').values(row).execute();
}

export function findCode(db: DbExecutor, codeHash: string): Promise<OauthCodeRow | undefined> {
  return db.selectFrom('oauth_codes').selectAll().where('code_hash', '=', codeHash).executeTakeFirst();
}

/** Takes the code: only the first of two concurrent exchanges gets the row. */
export function takeCode(db: DbExecutor, codeHash: string): Promise<OauthCodeRow | undefined> {
  return db.deleteFrom('oauth_codes').where('code_hash', '=', codeHash).returningAll().executeTakeFirst();
}

export function deleteExpiredCodes(db: DbExecutor, now: Date) {
  return db.deleteFrom('oauth_codes').where('expires_at', '<', now).execute();
}

export function insertGrant(
  db: DbExecutor,
  row: { client_id: string; user_id: string; scopes: string[]; resource: string },
) {
  return db
    .insertInto('oauth_grants')
    .values({ ...row, last_used_at: new Date() })
    .returning('id')
    .executeTakeFirstOrThrow();
}

export async function insertToken(
  db: DbExecutor,
  row: { token_hash: string; grant_id: number; kind: 'access' | 'refresh'; expires_at: Date },
): Promise<void> {
  await db.insertInto('oauth_tokens').values(row).execute();
}

/** A token with its grant and the grant's client. */
export function findToken(db: DbExecutor, tokenHash: string) {
  return db
    .selectFrom('oauth_tokens as t')
    .innerJoin('oauth_grants as g', 'g.id', 't.grant_id')
    .select([
      't.token_hash',
      't.kind',
      't.expires_at',
      't.used_at',
      'g.id as grant_id',
      'g.client_id',
      'g.user_id',
      'g.scopes',
      'g.resource',
    ])
    .where('t.token_hash', '=', tokenHash)
    .executeTakeFirst();
}

/**
 * An access token with its grant and person: what authenticating it needs, in one statement.
 * Refresh tokens are never accepted as bearer credentials.
 */
export function findAccessTokenActor(db: DbExecutor, tokenHash: string) {
  return db
    .selectFrom('oauth_tokens as t')
    .innerJoin('oauth_grants as g', 'g.id', 't.grant_id')
    .innerJoin('users as u', 'u.id', 'g.user_id')
    .select([
      't.expires_at',
      'g.id as grant_id',
      'g.client_id',
      'g.scopes',
      'g.resource',
      'u.id as user_id',
      'u.role',
      'u.email',
      'u.is_active',
    ])
    .where('t.token_hash', '=', tokenHash)
    .where('t.kind', '=', 'access')
    .executeTakeFirst();
}

/** Marks a refresh token used; false when it already was (a replay, or a concurrent refresh). */
export async function useRefreshToken(db: DbExecutor, tokenHash: string, now: Date): Promise<boolean> {
  const result = await db
    .updateTable('oauth_tokens')
    .set({ used_at: now })
    .where('token_hash', '=', tokenHash)
    .where('kind', '=', 'refresh')
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export function touchGrant(db: DbExecutor, grantId: number, now: Date) {
  return db.updateTable('oauth_grants').set({ last_used_at: now }).where('id', '=', grantId).execute();
}

export async function deleteToken(db: DbExecutor, tokenHash: string): Promise<void> {
  await db.deleteFrom('oauth_tokens').where('token_hash', '=', tokenHash).execute();
}

/** Tokens past their end (used refresh tokens are kept as long as they would have lived, to catch replays). */
export function deleteExpiredTokens(db: DbExecutor, now: Date) {
  return db.deleteFrom('oauth_tokens').where('expires_at', '<', now).execute();
}

/** Deletes a grant (and so its tokens); `userId` limits it to that person's grants. */
export async function deleteGrant(db: DbExecutor, grantId: number, userId?: string): Promise<boolean> {
  let query = db.deleteFrom('oauth_grants').where('id', '=', grantId);
  if (userId !== undefined) query = query.where('user_id', '=', userId);
  const result = await query.executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

/** Grants with their client's name, newest first; one person's, or everyone's (with their email). */
export function listGrants(db: DbExecutor, userId?: string) {
  let query = db
    .selectFrom('oauth_grants as g')
    .innerJoin('oauth_clients as c', 'c.client_id', 'g.client_id')
    .innerJoin('users as u', 'u.id', 'g.user_id')
    .select([
      'g.id',
      'g.client_id',
      'c.client_name',
      'c.redirect_uris',
      'g.user_id',
      'u.email',
      'g.scopes',
      'g.resource',
      'g.created_at',
      'g.last_used_at',
    ])
    .orderBy('g.id', 'desc');
  if (userId !== undefined) query = query.where('g.user_id', '=', userId);
  return query.execute();
}

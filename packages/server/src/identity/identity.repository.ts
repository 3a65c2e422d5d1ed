import { sql } from 'kysely';
import type { DbExecutor } from '../db/database.ts';
import { DOMAIN_GRANT_SOURCES } from './principals.ts';

export function findActorByTokenHash(db: DbExecutor, hashedToken: string) {
  return db
    .selectFrom('personal_access_tokens as t')
    .innerJoin('users', 'users.id', 't.user_id')
    .select([
      'users.id as user_id',
      'users.role as role',
      'users.email as email',
      'users.is_active as is_active',
      'users.account_type as account_type',
      't.id as token_id',
      't.expires_at as expires_at',
      't.created_by_api_key_id as created_by_api_key_id',
    ])
    .where('t.hashed_token', '=', hashedToken)
    .executeTakeFirst();
}

export function insertToken(
  db: DbExecutor,
  row: {
    user_id: string;
    name: string;
    hashed_token: string;
    display: string;
    expires_at: Date | null;
    created_by_api_key_id?: number | null;
  },
) {
  return db
    .insertInto('personal_access_tokens')
    .values(row)
    .returning(['id', 'name', 'display', 'expires_at', 'created_at', 'last_used_at'])
    .executeTakeFirstOrThrow();
}

export function listTokens(db: DbExecutor, userId: string) {
  return db
    .selectFrom('personal_access_tokens')
    .select(['id', 'name', 'display', 'expires_at', 'created_at', 'last_used_at'])
    .where('user_id', '=', userId)
    .orderBy('id')
    .execute();
}

/** Deletes one of the user's own tokens; undefined when the user has no token with that id. */
export function deleteToken(db: DbExecutor, userId: string, id: number) {
  return db
    .deleteFrom('personal_access_tokens')
    .where('user_id', '=', userId)
    .where('id', '=', id)
    .returning('id')
    .executeTakeFirst();
}

/** Deletes the tokens an API key minted (the key was regenerated: they die with its old value). */
export function deleteTokensMintedByKey(db: DbExecutor, apiKeyId: number) {
  return db.deleteFrom('personal_access_tokens').where('created_by_api_key_id', '=', apiKeyId).execute();
}

/** The person linked to this provider id, with what authentication needs of them. */
export function findUserByOidcSubject(db: DbExecutor, issuer: string, subject: string) {
  return db
    .selectFrom('oidc_subjects as s')
    .innerJoin('users', 'users.id', 's.user_id')
    .select(['users.id', 'users.email', 'users.role', 'users.account_type', 'users.is_active'])
    .where('s.issuer', '=', issuer)
    .where('s.subject', '=', subject)
    .executeTakeFirst();
}

/** The provider id a user is linked to at this issuer, if any. */
export async function findOidcSubjectOfUser(db: DbExecutor, userId: string, issuer: string) {
  const row = await db
    .selectFrom('oidc_subjects')
    .select('subject')
    .where('user_id', '=', userId)
    .where('issuer', '=', issuer)
    .executeTakeFirst();
  return row?.subject;
}

/** Links a person to a provider id; a pair or a user already linked stays as it was (first link wins). */
export function linkOidcSubject(db: DbExecutor, row: { issuer: string; subject: string; user_id: string }) {
  return db
    .insertInto('oidc_subjects')
    .values(row)
    .onConflict((oc) => oc.doNothing())
    .execute();
}

/** Links the user to their account at a source; an account links to one user (the last link wins). */
export function linkIdentity(db: DbExecutor, row: { user_id: string; source: string; external_id: string }) {
  return db
    .insertInto('user_external_identities')
    .values(row)
    .onConflict((oc) => oc.columns(['source', 'external_id']).doUpdateSet({ user_id: row.user_id }))
    .execute();
}

export function unlinkIdentity(
  db: DbExecutor,
  row: { user_id: string; source: string; external_id: string },
) {
  return db
    .deleteFrom('user_external_identities')
    .where('user_id', '=', row.user_id)
    .where('source', '=', row.source)
    .where('external_id', '=', row.external_id)
    .executeTakeFirst();
}

export function identitiesOfUser(db: DbExecutor, userId: string) {
  return db
    .selectFrom('user_external_identities')
    .select(['source', 'external_id'])
    .where('user_id', '=', userId)
    .orderBy('source')
    .orderBy('external_id')
    .execute();
}

/**
 * Replaces every group membership that one CC pair (or, with `cc_pair_id` null, one source-wide sync)
 * reported for a source. Run inside a transaction: the delete and the insert must commit together.
 */
export async function replaceExternalGroupMembers(
  db: DbExecutor,
  args: {
    cc_pair_id: number | null;
    source: string;
    groups: readonly { group_id: string; members: readonly string[] }[];
  },
) {
  let del = db.deleteFrom('external_group_members').where('source', '=', args.source);
  del =
    args.cc_pair_id === null
      ? del.where('cc_pair_id', 'is', null)
      : del.where('cc_pair_id', '=', args.cc_pair_id);
  await del.execute();
  const rows = args.groups.flatMap((g) =>
    [...new Set(g.members)].map((member) => ({
      cc_pair_id: args.cc_pair_id,
      source: args.source,
      group_id: g.group_id,
      member,
    })),
  );
  for (let i = 0; i < rows.length; i += 1000) {
    await db
      .insertInto('external_group_members')
      .values(rows.slice(i, i + 1000))
      .execute();
  }
}

/**
 * Everything a user is known as at sources: `email:<their email>`, `user:<source>:<id>` for each
 * linked identity (and `email:` for identities that are emails), `group:<source>:<id>` for every
 * external group one of those is a member of, and `group:<source>:domain:<domain>` for each linked
 * identity that is an email at a source with domain grants (Google Drive's `domain` permissions).
 */
export async function externalPrincipalsOfUser(db: DbExecutor, userId: string): Promise<string[]> {
  // Raw SQL: a CTE and five UNIONs of `||`-built strings tested with `position(… in …)`; the builder
  // would write each of them as a raw fragment, less readable than the statement itself.
  const { rows } = await sql<{ p: string }>`
    WITH direct AS (
      SELECT 'email:' || lower(u.email) AS p FROM users u WHERE u.id = ${userId}
      UNION SELECT 'user:' || i.source || ':' || i.external_id FROM user_external_identities i
        WHERE i.user_id = ${userId}
      UNION SELECT 'email:' || lower(i.external_id) FROM user_external_identities i
        WHERE i.user_id = ${userId} AND position('@' in i.external_id) > 0
    )
    SELECT p FROM direct
    UNION SELECT 'group:' || m.source || ':' || m.group_id FROM external_group_members m
      WHERE m.member IN (SELECT p FROM direct)
    UNION SELECT 'group:' || i.source || ':domain:' || lower(split_part(i.external_id, '@', 2))
      FROM user_external_identities i
      WHERE i.user_id = ${userId} AND i.source = ANY(${[...DOMAIN_GRANT_SOURCES]}::text[])
        AND position('@' in i.external_id) > 0`.execute(db);
  return rows.map((r) => r.p).sort();
}

/** Sets the external principals that may see each document (what a `sync` source lists). */
export async function setDocumentExternalAccess(
  db: DbExecutor,
  entries: readonly { document_id: string; principals: readonly string[] }[],
) {
  for (const entry of entries) {
    await db
      .updateTable('documents')
      .set({ access_external: [...new Set(entry.principals)] })
      .where('id', '=', entry.document_id)
      .execute();
  }
}

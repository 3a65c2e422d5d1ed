import type { DbExecutor } from '../db/database.ts';
import * as userGroupsRepository from '../user-groups/user-groups.repository.ts';
import type { Actor } from './roles.ts';

/**
 * What an actor reaches through user groups: the one place that reads group membership and
 * curatorship for access rules. Domains load it once per request and ask the predicates below.
 */
export interface Scope {
  user_id: string;
  admin: boolean;
  /** Groups the actor belongs to (as member or curator). */
  memberOf: ReadonlySet<number>;
  /** Groups the actor curates; empty unless the actor's role is `curator` (admins need none). */
  curates: ReadonlySet<number>;
}

/** The groups the actor belongs to (as member or curator): what document access needs of the scope. */
export function memberGroupIds(db: DbExecutor, actor: Actor): Promise<number[]> {
  return userGroupsRepository.groupIdsOfUser(db, actor.user_id);
}

export async function loadScope(db: DbExecutor, actor: Actor): Promise<Scope> {
  if (actor.role === 'admin')
    return { user_id: actor.user_id, admin: true, memberOf: new Set(), curates: new Set() };
  const [memberOf, curates] = await Promise.all([
    memberGroupIds(db, actor),
    actor.role === 'curator'
      ? userGroupsRepository.curatedGroupIdsOfUser(db, actor.user_id)
      : Promise.resolve([] as number[]),
  ]);
  return { user_id: actor.user_id, admin: false, memberOf: new Set(memberOf), curates: new Set(curates) };
}

/** Admins; curators of every one of `groups`, which must name at least one (nothing unscoped). */
export function curatesAll(scope: Scope, groups: readonly number[]): boolean {
  return scope.admin || (groups.length > 0 && groups.every((g) => scope.curates.has(g)));
}

/** Admins; curators of at least one of `groups`. */
export function curatesAny(scope: Scope, groups: readonly number[]): boolean {
  return scope.admin || groups.some((g) => scope.curates.has(g));
}

/** Admins; members (or curators) of at least one of `groups`. */
export function memberOfAny(scope: Scope, groups: readonly number[]): boolean {
  return scope.admin || groups.some((g) => scope.memberOf.has(g));
}

/** The groups among `groups` the actor does not curate (none for admins): for the 403 naming them. */
export function notCurated(scope: Scope, groups: readonly number[]): number[] {
  return scope.admin ? [] : groups.filter((g) => !scope.curates.has(g));
}

/** Whether the actor is the user `ownerId` (or an admin). */
export function ownsOrAdmin(scope: Scope, ownerId: string | null | undefined): boolean {
  return scope.admin || (ownerId != null && ownerId === scope.user_id);
}

/** Something restricted to user groups, or for everyone (`group_scoped: false`). */
export interface GroupScoped {
  group_scoped: boolean;
  groups: readonly number[];
}

/**
 * Who manages and who uses each kind of resource, written once. "Manage" is edit, delete, and for
 * management endpoints also read; "use" is read or run by people who do not manage it. The permission table
 * of docs/security.md repeats this; `scope.test.ts` checks every line.
 *
 * - Management by a curator always needs every group of the resource curated (`curatesAll`): a
 *   resource shared with a group someone else curates is not theirs alone to change. A resource with
 *   no group (public, unscoped, the ingestion API's own pair) is admin-only.
 * - Use by members needs one of its groups (`memberOfAny`).
 */
export const policy = {
  /** CC pairs: their groups. Also gates the documents they own (ingestion API, connector-docs). */
  manageCcPair: (scope: Scope, pair: { groups: readonly number[] }) => curatesAll(scope, pair.groups),
  /**
   * Connectors: the groups of their pairs; a connector with no pair yet is managed by its creator
   * (the curator who is about to pair it).
   */
  manageConnector: (
    scope: Scope,
    connector: { group_ids: readonly number[]; creator_id: string | null; credential_ids: readonly number[] },
  ) =>
    curatesAll(scope, connector.group_ids) ||
    (connector.credential_ids.length === 0 && ownsOrAdmin(scope, connector.creator_id)),
  /** Credentials: their owner, or a curator of every group they are for. */
  manageCredential: (scope: Scope, credential: { user_id: string | null; groups: readonly number[] }) =>
    ownsOrAdmin(scope, credential.user_id) || curatesAll(scope, credential.groups),
  /** A document: a curator changes it only when they manage every pair owning it (at least one). */
  manageDocument: (scope: Scope, owners: readonly { groups: readonly number[] }[]) =>
    scope.admin || (owners.length > 0 && owners.every((pair) => curatesAll(scope, pair.groups))),
  /** OpenAPI actions and MCP servers: scoped to groups, all of them curated. */
  manageAction: (scope: Scope, action: GroupScoped) =>
    scope.admin || (action.group_scoped && curatesAll(scope, action.groups)),
  /** Use (list, read, call) an action or MCP server: unscoped, or a member of one of its groups. */
  useAction: (scope: Scope, action: GroupScoped) => !action.group_scoped || memberOfAny(scope, action.groups),
  /** Agents: their owner, or a curator of every group they are shared with. */
  managePersona: (scope: Scope, persona: { owner_id: string | null; groups: readonly number[] }) =>
    ownsOrAdmin(scope, persona.owner_id) || curatesAll(scope, persona.groups),
  /** Agents are seen through one of their groups (besides public, owner and direct shares). */
  viewPersonaThroughGroups: (scope: Scope, persona: { groups: readonly number[] }) =>
    memberOfAny(scope, persona.groups),
  /** A CC pair named in a document set: one the actor manages, or a public one (everyone sees its documents). */
  referenceCcPair: (scope: Scope, pair: { access_type: string; groups: readonly number[] }) =>
    pair.access_type === 'public' || curatesAll(scope, pair.groups),
  /** Document sets: their owner. */
  manageDocumentSet: (scope: Scope, set: { owner_id: string | null }) => ownsOrAdmin(scope, set.owner_id),
  /** Uploads for `file` connectors: their uploader. */
  useUpload: (scope: Scope, upload: { uploaded_by: string | null }) => ownsOrAdmin(scope, upload.uploaded_by),
} as const;

import * as documentsRepository from '../../documents/documents.repository.ts';
import * as documentsService from '../../documents/documents.service.ts';
import type { ExternalAccessInput } from '../../documents/service/prepare.ts';
import * as identityRepository from '../../identity/identity.repository.ts';
import { emailPrincipal, groupPrincipal, userPrincipal } from '../../identity/principals.ts';
import * as connectorsRepository from '../connectors.repository.ts';
import * as indexingRepository from '../indexing.repository.ts';
import type { AnySource, ExternalAccess, ExternalGroup, SourceRunContext } from '../sources/source.ts';
import type { Deps } from './shared.ts';

/**
 * A source's ACL of one document as principals (`identity/principals.ts`): emails, accounts at the
 * source and the source's groups, which match a user's email, linked identities and external groups.
 */
export function principalsOf(source: string, access: ExternalAccess | undefined): ExternalAccessInput {
  if (!access) return { is_public: false, principals: [] };
  return {
    is_public: access.is_public,
    principals: [
      ...access.user_emails.map(emailPrincipal),
      ...(access.user_ids ?? []).map((id) => userPrincipal(source, id)),
      ...access.external_group_ids.map((id) => groupPrincipal(source, id)),
    ],
  };
}

/** Records the members of the source's groups for this pair (replacing what an earlier sync found). */
export async function syncExternalGroups(
  ctx: Pick<Deps, 'db'>,
  pairId: number,
  source: string,
  groups: readonly ExternalGroup[],
): Promise<void> {
  await ctx.db.transaction().execute((trx) =>
    identityRepository.replaceExternalGroupMembers(trx, {
      cc_pair_id: pairId,
      source,
      groups: groups.map((g) => ({
        group_id: g.group_id,
        members: [
          ...g.member_emails.map(emailPrincipal),
          ...(g.member_ids ?? []).map((id) => userPrincipal(source, id)),
        ],
      })),
    }),
  );
}

/**
 * Removes the pair's ownership of documents that vanished from the source; those no other pair owns
 * leave the database and the index (the deletion path of a pair's documents). Returns how many went.
 */
export async function removeVanished(
  ctx: Pick<Deps, 'db' | 'search'>,
  pairId: number,
  vanished: string[],
): Promise<number> {
  for (let i = 0; i < vanished.length; i += 500) {
    const batch = vanished.slice(i, i + 500);
    const orphans = await indexingRepository.dropOwnership(ctx.db, pairId, batch);
    await connectorsRepository.deleteDocuments(ctx.db, orphans);
    if (orphans.length) await ctx.search.deleteDocuments(orphans);
  }
  return vanished.length;
}

/**
 * A prune run (`prune_freq`): lists every id the source still has (only ids are held) and removes the
 * pair's documents that are not among them. A listing that fails removes nothing.
 */
export async function prunePair(
  ctx: Pick<Deps, 'db' | 'search' | 'logger'>,
  pairId: number,
  source: AnySource,
  run: SourceRunContext<unknown, unknown>,
): Promise<number | null> {
  if (!source.listIds) return null;
  const current = new Set<string>();
  for await (const ids of source.listIds(run)) {
    for (const id of ids) current.add(id);
    if (run.signal.aborted) return null;
  }
  const vanished = (await indexingRepository.pairDocumentIds(ctx.db, pairId)).filter(
    (id) => !current.has(id),
  );
  return removeVanished(ctx, pairId, vanished);
}

/**
 * Permission sync of a `sync` pair's documents without re-reading their content: a source-wide access
 * (`pairAccess`) on every document of the pair, or per-document or per-container access (`permissions`).
 * Only documents whose access changed are touched; their combined access and the index follow.
 */
export async function syncPermissions(
  ctx: Pick<Deps, 'db' | 'search' | 'logger'>,
  pairId: number,
  sourceName: string,
  source: AnySource,
  run: SourceRunContext<unknown, unknown>,
): Promise<number> {
  const changed: string[] = [];
  if (source.pairAccess) {
    const access = principalsOf(sourceName, await source.pairAccess(run));
    changed.push(...(await indexingRepository.setExternalAccess(ctx.db, pairId, null, access)));
  } else if (source.permissions) {
    for await (const batch of source.permissions(run)) {
      for (const entry of batch) {
        const access = principalsOf(sourceName, entry.access);
        changed.push(
          ...('document_id' in entry
            ? await indexingRepository.setExternalAccess(ctx.db, pairId, [entry.document_id], access)
            : await indexingRepository.setExternalAccess(
                ctx.db,
                pairId,
                null,
                access,
                entry.document_id_prefix,
              )),
        );
      }
      if (run.signal.aborted) break;
    }
  }
  for (let i = 0; i < changed.length; i += 500) {
    const batch = changed.slice(i, i + 500);
    await documentsRepository.recomputeAccess(ctx.db, batch);
    if (ctx.search.kind !== 'postgres') await documentsService.syncIndex({ ctx, documentIds: batch });
  }
  return changed.length;
}

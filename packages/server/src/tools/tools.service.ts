import type { Actor } from '../auth/roles.ts';
import { memberGroupIds } from '../auth/scope.ts';
import type { Db } from '../db/database.ts';
import * as toolsRepository from './tools.repository.ts';
import type { ToolSnapshot } from './tools.schemas.ts';

/** Every tool an agent can be given: the built-in ones and those of the actions this actor may use. */
export async function listTools({ ctx }: { ctx: { db: Db; actor: Actor } }): Promise<ToolSnapshot[]> {
  const isAdmin = ctx.actor.role === 'admin';
  return toolsRepository.listTools(ctx.db, {
    isAdmin,
    memberOf: isAdmin ? [] : await memberGroupIds(ctx.db, ctx.actor),
  });
}

import type { Actor } from '../auth/roles.ts';
import type { Db } from '../db/database.ts';
import * as toolsRepository from './tools.repository.ts';
import type { ToolSnapshot } from './tools.schemas.ts';

/** Every tool an agent can be given: the built-in ones and those of the actions this actor may use. */
export async function listTools({ ctx }: { ctx: { db: Db; actor: Actor } }): Promise<ToolSnapshot[]> {
  return toolsRepository.listTools(ctx.db, {
    userId: ctx.actor.user_id,
    isAdmin: ctx.actor.role === 'admin',
  });
}

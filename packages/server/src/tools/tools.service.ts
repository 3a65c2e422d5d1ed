import type { Db } from '../db/database.ts';
import * as toolsRepository from './tools.repository.ts';
import type { ToolSnapshot } from './tools.schemas.ts';

/** Every tool an agent can be given: the built-in ones and those of configured actions. */
export async function listTools({ ctx }: { ctx: { db: Db } }): Promise<ToolSnapshot[]> {
  return toolsRepository.listTools(ctx.db);
}

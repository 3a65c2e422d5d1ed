import type { Db } from '../db/database.ts';
import * as usersRepository from './users.repository.ts';
import type { UserSnapshot } from './users.schemas.ts';

/** Every user: today the service-account users behind API keys. */
export async function listUsers({ ctx }: { ctx: { db: Db } }): Promise<UserSnapshot[]> {
  return usersRepository.listUsers(ctx.db);
}

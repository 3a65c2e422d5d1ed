import type { Actor, Role } from '../auth/roles.ts';
import type { ServiceContext } from '../context.ts';
import { isUniqueViolation } from '../db/database.ts';
import { AppError } from '../errors.ts';
import * as identityRepository from '../identity/identity.repository.ts';
import * as usersRepository from './users.repository.ts';
import type {
  ExternalIdentityInput,
  InviteUsersInput,
  ListUsersInput,
  SetUserRoleInput,
  UserEmailInput,
  UserPage,
  UserSnapshot,
} from './users.schemas.ts';

type Deps = ServiceContext<'db'> & Partial<ServiceContext<'authCache'>>;

/** Every user: the service-account users behind API keys and people. */
export async function listUsers({ ctx }: { ctx: ServiceContext<'db'> }): Promise<UserSnapshot[]> {
  return usersRepository.listUsers(ctx.db);
}

export async function pageUsers({
  ctx,
  input,
}: {
  ctx: ServiceContext<'db'>;
  input: ListUsersInput;
}): Promise<UserPage> {
  return usersRepository.pageUsers(ctx.db, {
    q: input.q,
    offset: input.page_num * input.page_size,
    limit: input.page_size,
  });
}

/** A person with this email (unique, case-insensitive) and role; 409 when the email is taken. */
export async function createPerson({
  ctx,
  email,
  role,
}: {
  ctx: Deps;
  email: string;
  role: Role;
}): Promise<UserSnapshot> {
  try {
    const row = await usersRepository.insertUser(ctx.db, {
      email: email.trim(),
      role,
      account_type: 'person',
    });
    return (await usersRepository.findUserByEmail(ctx.db, row.email))!;
  } catch (error) {
    if (isUniqueViolation(error)) {
      throw new AppError('DUPLICATE_RESOURCE', `A user with the email ${email} already exists`);
    }
    throw error;
  }
}

/** Creates people for the emails not yet taken; existing users are left as they are. */
export async function inviteUsers({
  ctx,
  input,
}: {
  ctx: Deps;
  input: InviteUsersInput;
}): Promise<UserSnapshot[]> {
  const result: UserSnapshot[] = [];
  for (const email of new Set(input.emails.map((e) => e.trim().toLowerCase()))) {
    const existing = await usersRepository.findUserByEmail(ctx.db, email);
    result.push(existing ?? (await createPerson({ ctx, email, role: input.role })));
  }
  return result;
}

/** A person (not a service account) by email, for the CLI's token command. */
export async function findPersonByEmail({ ctx, email }: { ctx: Deps; email: string }): Promise<UserSnapshot> {
  const user = await userByEmail(ctx, email);
  if (user.account_type === 'service_account') {
    throw new AppError('BAD_REQUEST', `${email} belongs to an API key, not a person`);
  }
  return user;
}

async function userByEmail(ctx: Deps, email: string) {
  const user = await usersRepository.findUserByEmail(ctx.db, email);
  if (!user) throw new AppError('USER_NOT_FOUND', `No user with the email ${email}`);
  return user;
}

function refuseSelf(actor: Actor, userId: string, verb: string) {
  if (actor.user_id === userId) throw new AppError('BAD_REQUEST', `You cannot ${verb} yourself`);
}

/** Takes effect on the caller's very next request, in every process. */
export async function setUserRole({
  ctx,
  input,
}: {
  ctx: Deps & { actor: Actor };
  input: SetUserRoleInput;
}): Promise<UserSnapshot> {
  const user = await userByEmail(ctx, input.user_email);
  if (user.role !== input.new_role) refuseSelf(ctx.actor, user.id, 'change the role of');
  await usersRepository.updateUser(ctx.db, user.id, { role: input.new_role });
  await ctx.authCache?.invalidate();
  return { ...user, role: input.new_role };
}

export async function setUserActive({
  ctx,
  input,
  active,
}: {
  ctx: Deps & { actor: Actor };
  input: UserEmailInput;
  active: boolean;
}): Promise<UserSnapshot> {
  const user = await userByEmail(ctx, input.user_email);
  if (!active) refuseSelf(ctx.actor, user.id, 'deactivate');
  await usersRepository.updateUser(ctx.db, user.id, { is_active: active });
  await ctx.authCache?.invalidate();
  return { ...user, is_active: active };
}

/**
 * Deletes a person with their chats, tokens, files and private agents; agents others can see stay
 * (without an owner). Service-account users go with their API key instead.
 */
export async function deleteUser({ ctx, input }: { ctx: Deps & { actor: Actor }; input: UserEmailInput }) {
  const user = await userByEmail(ctx, input.user_email);
  refuseSelf(ctx.actor, user.id, 'delete');
  if (user.account_type === 'service_account') {
    throw new AppError('BAD_REQUEST', 'This user belongs to an API key: delete the key instead');
  }
  await ctx.db.transaction().execute(async (trx) => {
    await usersRepository.deletePrivatePersonasOf(trx, user.id);
    await usersRepository.deleteUser(trx, user.id);
  });
  await ctx.authCache?.invalidate();
}

/** The accounts at sources linked to a person (permission sync matches documents' ACLs against them). */
export async function listExternalIdentities({ ctx, input }: { ctx: Deps; input: UserEmailInput }) {
  const user = await userByEmail(ctx, input.user_email);
  return identityRepository.identitiesOfUser(ctx.db, user.id);
}

/** Links a person to an account at a source; linking twice is harmless. */
export async function linkExternalIdentity({ ctx, input }: { ctx: Deps; input: ExternalIdentityInput }) {
  const user = await userByEmail(ctx, input.user_email);
  await identityRepository.linkIdentity(ctx.db, {
    user_id: user.id,
    source: input.source,
    external_id: input.external_id,
  });
  await ctx.authCache?.invalidate();
  return identityRepository.identitiesOfUser(ctx.db, user.id);
}

export async function unlinkExternalIdentity({ ctx, input }: { ctx: Deps; input: ExternalIdentityInput }) {
  const user = await userByEmail(ctx, input.user_email);
  await identityRepository.unlinkIdentity(ctx.db, {
    user_id: user.id,
    source: input.source,
    external_id: input.external_id,
  });
  await ctx.authCache?.invalidate();
}

import { type Actor, roleAtLeast } from '../auth/roles.ts';
import type { ServiceContext } from '../context.ts';
import { AppError } from '../errors.ts';
import * as usersRepository from '../users/users.repository.ts';
import * as usersService from '../users/users.service.ts';

type Deps = ServiceContext<'db'> & Partial<ServiceContext<'authCache' | 'oidc'>>;

/**
 * A person signed in with a bearer JWT from `KAS_OIDC_ISSUER`: verified on every request (keys are
 * cached by the verifier), found by email or provisioned, raised to the role the configuration grants,
 * and refused when deactivated. The verified token stays on the actor for OAuth pass-through.
 */
export async function authenticateOidc({ ctx, token }: { ctx: Deps; token: string }): Promise<Actor> {
  if (!ctx.oidc) {
    throw new AppError(
      'UNAUTHENTICATED',
      'This service does not accept OIDC tokens (KAS_OIDC_ISSUER is not set); use an API key or personal token',
    );
  }
  const identity = await ctx.oidc.verify(token);
  let user = await usersRepository.findUserByEmail(ctx.db, identity.email);
  if (!user) {
    if (!ctx.oidc.autoProvision) {
      throw new AppError(
        'UNAUTHENTICATED',
        `No user has the email ${identity.email}; ask an admin to invite you`,
      );
    }
    try {
      user = await usersService.createPerson({ ctx, email: identity.email, role: identity.role });
    } catch (error) {
      // Two first requests at once: the other one created the user.
      user = await usersRepository.findUserByEmail(ctx.db, identity.email);
      if (!user) throw error;
    }
  }
  if (!user.is_active)
    throw new AppError('UNAUTHENTICATED', 'This user is deactivated; ask an admin to reactivate them');
  let role = user.role;
  if (!roleAtLeast(role, identity.role)) {
    await usersRepository.updateUser(ctx.db, user.id, { role: identity.role });
    await ctx.authCache?.invalidate();
    role = identity.role;
  }
  return {
    user_id: user.id,
    role,
    api_key_id: null,
    email: user.email,
    credential: 'oidc',
    rate_limit_key: `user:${user.id}`,
    oidc_token: token,
  };
}

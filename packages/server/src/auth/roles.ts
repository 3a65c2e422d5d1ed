import { z } from 'zod';

export const Role = z.enum(['basic', 'curator', 'admin']).meta({ id: 'Role' });
export type Role = z.infer<typeof Role>;

const RANK: Record<Role, number> = { basic: 0, curator: 1, admin: 2 };

export function roleAtLeast(role: Role, minimum: Role): boolean {
  return RANK[role] >= RANK[minimum];
}

/** Who is calling: the service-account user behind an API key. */
export interface Actor {
  user_id: string;
  role: Role;
  api_key_id: number;
}

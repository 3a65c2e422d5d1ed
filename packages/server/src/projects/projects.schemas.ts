import { z } from 'zod';

export const UserProject = z
  .object({
    id: z.number().int(),
    name: z.string(),
    description: z.string(),
    instructions: z.string().meta({ description: 'Joined to the prompt of every chat in the project' }),
    created_at: z.string(),
    updated_at: z.string(),
    chat_count: z.number().int(),
  })
  .meta({ id: 'UserProject' });
export type UserProject = z.infer<typeof UserProject>;

export const ProjectId = z.number().int().positive();

export const CreateProjectInput = z.object({
  name: z.string().trim().min(1).max(255),
  description: z.string().max(2000).optional(),
  instructions: z.string().max(20_000).optional(),
});
export type CreateProjectInput = z.infer<typeof CreateProjectInput>;

export const UpdateProjectInput = z.object({
  project_id: ProjectId,
  name: z.string().trim().min(1).max(255).optional(),
  description: z.string().max(2000).optional(),
  instructions: z.string().max(20_000).optional(),
});
export type UpdateProjectInput = z.infer<typeof UpdateProjectInput>;

export const ProjectIdInput = z.object({ project_id: ProjectId });

import type { Actor } from '../auth/roles.ts';
import type { Db } from '../db/database.ts';
import { AppError } from '../errors.ts';
import * as projectsRepository from './projects.repository.ts';
import type { CreateProjectInput, UpdateProjectInput, UserProject } from './projects.schemas.ts';

type Row = NonNullable<Awaited<ReturnType<typeof projectsRepository.findProject>>>;

function toProject(row: Row): UserProject {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    instructions: row.instructions,
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
    chat_count: row.chat_count,
  };
}

/** A project of the caller: 404 when unknown, 403 when it belongs to another user. */
export async function getOwnedProject({
  ctx,
  actor,
  projectId,
}: {
  ctx: { db: Db };
  actor: Actor;
  projectId: number;
}): Promise<UserProject> {
  const row = await projectsRepository.findProject(ctx.db, projectId);
  if (!row) throw new AppError('PROJECT_NOT_FOUND', `Project ${projectId} not found`);
  if (row.user_id !== actor.user_id)
    throw new AppError('PROJECT_NOT_FOUND', `Project ${projectId} not found`);
  return toProject(row);
}

export async function listProjects({ ctx }: { ctx: { db: Db } & { actor: Actor } }): Promise<UserProject[]> {
  const { actor } = ctx;
  return (await projectsRepository.listProjects(ctx.db, actor.user_id)).map(toProject);
}

export async function createProject({
  ctx,
  input,
}: {
  ctx: { db: Db } & { actor: Actor };
  input: CreateProjectInput;
}): Promise<UserProject> {
  const { actor } = ctx;
  const { id } = await projectsRepository.insertProject(ctx.db, {
    user_id: actor.user_id,
    name: input.name,
    description: input.description ?? '',
    instructions: input.instructions ?? '',
  });
  return getOwnedProject({ ctx, actor, projectId: id });
}

export async function updateProject({
  ctx,
  input,
}: {
  ctx: { db: Db } & { actor: Actor };
  input: UpdateProjectInput;
}): Promise<UserProject> {
  const { actor } = ctx;
  const { project_id, ...patch } = input;
  await getOwnedProject({ ctx, actor, projectId: project_id });
  await projectsRepository.updateProject(ctx.db, project_id, patch);
  return getOwnedProject({ ctx, actor, projectId: project_id });
}

/** Deleting a project keeps its chats; they become ordinary chats. */
export async function deleteProject({
  ctx,
  projectId,
}: {
  ctx: { db: Db } & { actor: Actor };
  projectId: number;
}): Promise<void> {
  const { actor } = ctx;
  await getOwnedProject({ ctx, actor, projectId });
  await projectsRepository.deleteProject(ctx.db, projectId);
}

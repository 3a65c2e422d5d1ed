import type { Db } from '../../db/database.ts';
import { AppError } from '../../errors.ts';
import * as personasRepository from '../personas.repository.ts';
import type { PersonaLabel } from '../personas.schemas.ts';

export async function listLabels({ ctx }: { ctx: { db: Db } }): Promise<PersonaLabel[]> {
  return personasRepository.listLabels(ctx.db);
}

function duplicateLabel(name: string): AppError {
  return new AppError('DUPLICATE_RESOURCE', `A label named '${name}' already exists`);
}

export async function createLabel({ ctx, name }: { ctx: { db: Db }; name: string }): Promise<PersonaLabel> {
  return ctx.db.transaction().execute(async (trx) => {
    if (await personasRepository.findLabelByName(trx, name)) throw duplicateLabel(name);
    return personasRepository.insertLabel(trx, name);
  });
}

export async function updateLabel({
  ctx,
  id,
  name,
}: {
  ctx: { db: Db };
  id: number;
  name: string;
}): Promise<PersonaLabel> {
  return ctx.db.transaction().execute(async (trx) => {
    const existing = await personasRepository.findLabelByName(trx, name);
    if (existing && existing.id !== id) throw duplicateLabel(name);
    const label = await personasRepository.renameLabel(trx, id, name);
    if (!label) throw new AppError('LABEL_NOT_FOUND', `Label ${id} not found`);
    return label;
  });
}

/** Deleting a label removes it from every agent. */
export async function deleteLabel({ ctx, id }: { ctx: { db: Db }; id: number }): Promise<void> {
  const deleted = await personasRepository.deleteLabel(ctx.db, id);
  if (!deleted.numDeletedRows) throw new AppError('LABEL_NOT_FOUND', `Label ${id} not found`);
}

import { z } from 'zod';
import {
  adminProcedure,
  basicProcedure,
  curatorProcedure,
  limitedProcedure,
  router,
  serviceContext,
} from '../trpc.ts';
import {
  CreateLabelInput,
  CreatePersonaInput,
  DisplayPrioritiesInput,
  FullPersonaSnapshot,
  LabelIdInput,
  ListPersonasInput,
  MinimalPersonaPage,
  PersonaIdInput,
  PersonaLabel,
  PersonaPage,
  PersonaSnapshot,
  SetFeaturedInput,
  SetListedInput,
  SetPublicInput,
  UpdateLabelInput,
  UpdatePersonaInput,
} from './personas.schemas.ts';
import * as personasService from './personas.service.ts';

const tags = ['Agents'];
const labelTags = ['Agent labels'];

// Label routes come first: `/persona/labels` must be matched before `/persona/{persona_id}`.
const labelsRouter = router({
  list: basicProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/persona/labels',
        tags: labelTags,
        summary: 'List agent labels',
        description: 'Labels used to group agents in a picker. Any role.',
      },
    })
    .input(z.object({}))
    .output(z.array(PersonaLabel))
    .query(({ ctx }) => personasService.listLabels({ ctx: serviceContext(ctx) })),

  create: basicProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/persona/labels',
        tags: labelTags,
        summary: 'Create an agent label',
        description: 'Any user may create a label; a name already taken → 409.',
      },
    })
    .input(CreateLabelInput)
    .output(PersonaLabel)
    .mutation(({ ctx, input }) =>
      personasService.createLabel({ ctx: serviceContext(ctx), name: input.name }),
    ),

  update: adminProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/admin/persona/label/{label_id}',
        tags: labelTags,
        summary: 'Rename an agent label',
        description: 'Renames a label on every agent that carries it.',
      },
    })
    .input(UpdateLabelInput)
    .output(PersonaLabel)
    .mutation(({ ctx, input }) =>
      personasService.updateLabel({ ctx: serviceContext(ctx), id: input.label_id, name: input.label_name }),
    ),

  delete: adminProcedure
    .meta({
      noContent: true,
      openapi: {
        method: 'DELETE',
        path: '/admin/persona/label/{label_id}',
        tags: labelTags,
        summary: 'Delete an agent label',
        description: 'Removes the label from every agent.',
      },
    })
    .input(LabelIdInput)
    .output(z.void())
    .mutation(({ ctx, input }) =>
      personasService.deleteLabel({ ctx: serviceContext(ctx), id: input.label_id }),
    ),
});

export const personasRouter = router({
  labels: labelsRouter,

  create: basicProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/persona',
        tags,
        summary: 'Create an agent',
        description:
          'Any user may create an agent; the caller owns it. Unknown document sets, tools, labels, users or groups → 400 naming them; non-empty `user_file_ids` → 400 (user knowledge is disabled); `is_featured: true` needs an admin.',
      },
    })
    .input(CreatePersonaInput)
    .output(PersonaSnapshot)
    .mutation(({ ctx, input }) => personasService.createPersona({ ctx: serviceContext(ctx), input })),

  update: basicProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/persona/{persona_id}',
        tags,
        summary: 'Update an agent',
        description:
          'Same fields as create; omitted fields (and `label_ids: null`) stay as they are. `display_priority` and `builtin_persona` are never changed here. Owner, a curator of all the agent’s groups, or an admin.',
      },
    })
    .input(UpdatePersonaInput)
    .output(PersonaSnapshot)
    .mutation(({ ctx, input }) => personasService.updatePersona({ ctx: serviceContext(ctx), input })),

  get: limitedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/persona/{persona_id}',
        tags,
        summary: 'Get an agent',
        description: 'Deleted or unknown → 404; not shared with the caller → 403.',
      },
    })
    .input(PersonaIdInput)
    .output(FullPersonaSnapshot)
    .query(({ ctx, input }) =>
      personasService.getPersona({ ctx: serviceContext(ctx), id: input.persona_id }),
    ),

  list: limitedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/agents',
        tags,
        summary: 'List agents',
        description:
          'The agents the caller can see (public, own, shared with the caller or one of its groups; admins all), ordered by `display_priority` (nulls last) then id.',
      },
    })
    .input(ListPersonasInput)
    .output(MinimalPersonaPage)
    .query(({ ctx, input }) => personasService.listPersonas({ ctx: serviceContext(ctx), input })),

  delete: basicProcedure
    .meta({
      noContent: true,
      openapi: {
        method: 'DELETE',
        path: '/persona/{persona_id}',
        tags,
        summary: 'Delete an agent',
        description:
          'Soft delete: hidden from every list (unless `include_deleted=true`), data kept. Owner or admin only; built-in agents cannot be deleted (400).',
      },
    })
    .input(PersonaIdInput)
    .output(z.void())
    .mutation(({ ctx, input }) =>
      personasService.deletePersona({ ctx: serviceContext(ctx), id: input.persona_id }),
    ),

  undelete: adminProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/admin/persona/{persona_id}/undelete',
        tags,
        summary: 'Restore a deleted agent',
        description: 'Admin only. An agent that is not deleted → 400.',
      },
    })
    .input(PersonaIdInput)
    .output(PersonaSnapshot)
    .mutation(({ ctx, input }) =>
      personasService.undeletePersona({ ctx: serviceContext(ctx), id: input.persona_id }),
    ),

  adminList: curatorProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/agents',
        tags,
        summary: 'List agents (admin)',
        description: 'Same query as `GET /api/agents`; items are full `PersonaSnapshot`s. Admin or curator.',
      },
    })
    .input(ListPersonasInput)
    .output(PersonaPage)
    .query(({ ctx, input }) => personasService.listPersonasForAdmin({ ctx: serviceContext(ctx), input })),

  setDisplayPriorities: curatorProcedure
    .meta({
      noContent: true,
      openapi: {
        method: 'PATCH',
        path: '/admin/agents/display-priorities',
        tags,
        summary: 'Reorder agents',
        description:
          'Sets `display_priority` for each agent id in the map. Every agent must exist (404) and be editable by the caller (403).',
      },
    })
    .input(DisplayPrioritiesInput)
    .output(z.void())
    .mutation(({ ctx, input }) => personasService.setDisplayPriorities({ ctx: serviceContext(ctx), input })),

  setListed: curatorProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/admin/persona/{persona_id}/listed',
        tags,
        summary: 'Show or hide an agent in the picker',
        description: "An unlisted agent still works by id but is left out of other users' agent lists.",
      },
    })
    .input(SetListedInput)
    .output(PersonaSnapshot)
    .mutation(({ ctx, input }) =>
      personasService.setListed({
        ctx: serviceContext(ctx),
        id: input.persona_id,
        isListed: input.is_listed,
      }),
    ),

  setFeatured: adminProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/admin/persona/{persona_id}/featured',
        tags,
        summary: 'Feature an agent or not',
        description: 'Sets `is_featured`, which clients use to show an agent first.',
      },
    })
    .input(SetFeaturedInput)
    .output(PersonaSnapshot)
    .mutation(({ ctx, input }) =>
      personasService.setFeatured({
        ctx: serviceContext(ctx),
        id: input.persona_id,
        isFeatured: input.is_featured,
      }),
    ),

  setPublic: basicProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/persona/{persona_id}/public',
        tags,
        summary: 'Make an agent public or private',
        description:
          'A public agent is visible to every user; a private one to its owner and the users and groups it is shared with. Owner, editors or admins.',
      },
    })
    .input(SetPublicInput)
    .output(PersonaSnapshot)
    .mutation(({ ctx, input }) =>
      personasService.setPublic({
        ctx: serviceContext(ctx),
        id: input.persona_id,
        isPublic: input.is_public,
      }),
    ),
});

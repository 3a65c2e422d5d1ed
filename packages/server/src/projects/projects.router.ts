import { z } from 'zod';
import { basicProcedure, router, serviceContext } from '../trpc.ts';
import { CreateProjectInput, ProjectIdInput, UpdateProjectInput, UserProject } from './projects.schemas.ts';
import * as projectsService from './projects.service.ts';

const tags = ['Projects'];

export const projectsRouter = router({
  list: basicProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/user/projects',
        tags,
        summary: "List the caller's projects",
        description: 'The projects the caller created, oldest first, each with its number of chats.',
      },
    })
    .input(z.object({}))
    .output(z.array(UserProject))
    .query(({ ctx }) => projectsService.listProjects({ ctx: serviceContext(ctx) })),

  create: basicProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/user/projects',
        tags,
        summary: 'Create a project',
        description: 'A folder of chats; its instructions join the prompt of every chat in it.',
      },
    })
    .input(CreateProjectInput)
    .output(UserProject)
    .mutation(({ ctx, input }) => projectsService.createProject({ ctx: serviceContext(ctx), input })),

  update: basicProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/user/projects/{project_id}',
        tags,
        summary: 'Update a project',
        description:
          "Changes only the fields given (name, description, instructions); another user's project → 404.",
      },
    })
    .input(UpdateProjectInput)
    .output(UserProject)
    .mutation(({ ctx, input }) => projectsService.updateProject({ ctx: serviceContext(ctx), input })),

  delete: basicProcedure
    .meta({
      noContent: true,
      openapi: {
        method: 'DELETE',
        path: '/user/projects/{project_id}',
        tags,
        summary: 'Delete a project',
        description: 'Its chats are kept and become ordinary chats.',
      },
    })
    .input(ProjectIdInput)
    .output(z.void())
    .mutation(({ ctx, input }) =>
      projectsService.deleteProject({
        ctx: serviceContext(ctx),
        projectId: input.project_id,
      }),
    ),
});

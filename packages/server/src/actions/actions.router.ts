import { basicProcedure, curatorProcedure, router, serviceContext } from '../trpc.ts';
import {
  CustomToolCreateInput,
  CustomToolUpdateInput,
  DeletedResponse,
  ToolDetail,
  ToolIdInput,
  ValidateDefinitionInput,
  ValidateDefinitionResponse,
} from './actions.schemas.ts';
import * as actionsService from './actions.service.ts';

const tags = ['Actions'];

export const actionsRouter = router({
  getTool: basicProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/tool/{tool_id}',
        tags,
        summary: 'Get a tool',
        description: 'A tool with its action configuration; header values masked.',
      },
    })
    .input(ToolIdInput)
    .output(ToolDetail)
    .query(({ ctx, input }) => actionsService.getTool({ ctx: serviceContext(ctx), toolId: input.tool_id })),

  validateCustomTool: curatorProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/admin/tool/custom/validate',
        tags,
        summary: 'Validate an OpenAPI definition',
        description: 'Lists the operations (one tool each); 400 says which path and operation is invalid.',
      },
    })
    .input(ValidateDefinitionInput)
    .output(ValidateDefinitionResponse)
    .mutation(({ input }) => actionsService.validateDefinition({ input })),

  createCustomTool: curatorProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/admin/tool/custom',
        tags,
        summary: 'Create an OpenAPI action',
        description:
          'Admin, or a curator for groups they curate (`groups`). Name and description default to `info.title` and `info.description`. The action is enabled on no agent until its `id` is put in an agent’s `tool_ids`.',
      },
    })
    .input(CustomToolCreateInput)
    .output(ToolDetail)
    .mutation(({ ctx, input }) => actionsService.createCustomTool({ ctx: serviceContext(ctx), input })),

  updateCustomTool: curatorProcedure
    .meta({
      openapi: {
        method: 'PUT',
        path: '/admin/tool/custom/{tool_id}',
        tags,
        summary: 'Update an OpenAPI action',
        description:
          'Partial update by an admin or a curator of all of its groups. Built-in and MCP tools cannot be modified here (400).',
      },
    })
    .input(CustomToolUpdateInput)
    .output(ToolDetail)
    .mutation(({ ctx, input }) => actionsService.updateCustomTool({ ctx: serviceContext(ctx), input })),

  deleteCustomTool: curatorProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/admin/tool/custom/{tool_id}',
        tags,
        summary: 'Delete an OpenAPI action',
        description: 'Also removes it from every agent.',
      },
    })
    .input(ToolIdInput)
    .output(DeletedResponse)
    .mutation(({ ctx, input }) =>
      actionsService.deleteCustomTool({ ctx: serviceContext(ctx), toolId: input.tool_id }),
    ),
});

export {
  createCustomTool,
  deleteCustomTool,
  getTool,
  updateCustomTool,
  validateDefinition,
} from './service/custom-tools.ts';

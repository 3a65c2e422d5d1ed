export { createLabel, deleteLabel, listLabels, updateLabel } from './service/labels.ts';
export { getPersona, getPersonaForChat, listPersonas, listPersonasForAdmin } from './service/read.ts';
export { isUserKnowledgeEnabled } from './service/shared.ts';
export {
  createPersona,
  deletePersona,
  setDisplayPriorities,
  setFeatured,
  setListed,
  setPublic,
  undeletePersona,
  updatePersona,
} from './service/write.ts';

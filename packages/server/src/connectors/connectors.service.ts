export {
  createConnector,
  deleteConnector,
  getConnector,
  listConnectors,
  runOnce,
  updateConnector,
} from './service/connectors.ts';
export {
  createCredential,
  deleteCredential,
  getCredential,
  listCredentials,
  updateCredential,
} from './service/credentials.ts';
export { handleConnectorEvent } from './service/events.ts';
export { uploadConnectorFiles } from './service/files.ts';
export {
  createPair,
  getPairDetails,
  indexingStatus,
  listAttempts,
  listErrors,
  processDeletion,
  setPairStatus,
  startDeletion,
} from './service/pairs.ts';

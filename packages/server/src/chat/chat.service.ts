export { type ChatRun, sendMessage, startChatTurn, streamMessage } from './service/send-message.ts';
export {
  createSession,
  deleteSession,
  getSession,
  listSessions,
  renameSession,
  searchSessions,
  setMessageAsLatest,
  stopSession,
  updateSharing,
} from './service/sessions.ts';

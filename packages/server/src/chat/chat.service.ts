export { type ConversationMessage, seedSession } from './service/conversation.ts';
export {
  beginTurn,
  type ChatRun,
  sendMessage,
  startChatTurn,
  streamMessage,
  type TurnOptions,
} from './service/send-message.ts';
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
export { resumeAnswer, resumeStream } from './service/stream-buffer.ts';
export { TurnFold, type TurnResult } from './service/turn-result.ts';

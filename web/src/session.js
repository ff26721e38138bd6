// A chat session of the page: the AI SDK's Chat on the transport of a mode, with the browser
// tools and automatic continuation wired in; opened new, reopened from the server's history, or
// named by the URL (`#<mode>/<chat id>`, so a reload reopens the chat).
import { Chat } from "@ai-sdk/react";
import {
  generateId,
  lastAssistantMessageIsCompleteWithApprovalResponses as approvalsDone,
  lastAssistantMessageIsCompleteWithToolCalls as toolCallsDone,
} from "ai";
import { fetchMessages } from "./api.js";
import { runBrowserTool } from "./browserTools/index.js";
import { pause } from "./pause.js";
import { createTransport } from "./transports.js";

/** A session `{ mode, chat, transport, voice, closed }`: chat `id` (a new one by default) with
 * `messages`, on the transport of `mode`. */
export async function openChat(mode, id = generateId(), messages = []) {
  const { transport, voice, closed } = await createTransport(mode, id);
  const chat = new Chat({
    id,
    messages,
    transport,
    sendAutomaticallyWhen: (o) => toolCallsDone(o) || approvalsDone(o),
    onToolCall: ({ toolCall }) => runBrowserTool(chat, toolCall),
  });
  history.replaceState(null, "", `#${mode}/${id}`); // a reload reopens this chat
  return { mode, chat, transport, voice, closed };
}

/** Chat `id` as the server has it (`GET /agent/chat/{id}/messages`), on the transport of `mode`:
 * after a reload, from the chat list, or to go on in another mode (a payment waiting for
 * approval included). A chat the server does not have (deleted, or never sent) gives a new one. */
export async function reopenChat(mode, id) {
  const messages = await fetchMessages(id);
  return messages === null ? openChat(mode) : openChat(mode, id, messages);
}

/** The chat named by the URL (`#<mode>/<chat id>`, after a reload), or a new SSE chat. One not
 * in the user's chat list (`chats`, when known) was never sent: nothing to load. */
export async function openFromUrl(chats) {
  const [, mode, id] = location.hash.match(/^#(sse|live|voice)\/([\w.:@-]+)$/) ?? [];
  if (!id) return openChat("sse");
  return chats && !chats.some((chat) => chat.id === id) ? openChat(mode, id) : reopenChat(mode, id);
}

/** Close the session's transport and wait (at most 2 s) for its sockets to close: the server
 * refuses to delete a chat with a live socket open. */
export async function closeSession(session) {
  session.transport.close?.();
  await Promise.race([session.closed(), pause(2000)]);
}

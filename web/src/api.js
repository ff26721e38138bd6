// The agent's HTTP routes the page calls besides the chat transports themselves (all under
// /agent): the user's chat list, a chat's history, deleting a chat, and stopping an SSE answer.
import { pause } from "./pause.js";

const chatUrl = (id) => `/agent/chat/${encodeURIComponent(id)}`;

/** What went wrong with a request, for the user: the server's `{"error": ...}` when it sent one. */
export async function problem(response, what) {
  const body = await response.json().catch(() => ({}));
  return `${what}: ${body.error ?? `HTTP ${response.status}`}`;
}

/** GET /agent/chats: one page of the user's chats (`{id, title, updated}`), newest first, and
 * the URL of the next (older) page when there is one (the `Link: <…>; rel="next"` header).
 * `url`: a page's URL (`/agent/chats?limit=…`, or a `next`). Its answer also sets the identity
 * cookie that every later request carries. */
export async function fetchChats(url = "/agent/chats") {
  const response = await fetch(url);
  if (!response.ok) throw new Error(await problem(response, "The chat list"));
  const link = response.headers.get("link") ?? "";
  const next = /<([^>]+)>;\s*rel="next"/.exec(link)?.[1];
  return { chats: await response.json(), next };
}

/** GET /agent/chat/{id}/messages: the chat's UI messages as the server has them, or null when
 * the server does not have the chat (deleted, or never sent). */
export async function fetchMessages(id) {
  const response = await fetch(`${chatUrl(id)}/messages`);
  if (response.status === 404) return null;
  if (!response.ok) throw new Error(await problem(response, "The chat could not be loaded"));
  return response.json();
}

/** DELETE /agent/chat/{id}; what went wrong, for the user, or undefined (a chat the server does
 * not have counts as deleted). `retryWhileRunning`: the chat was just left, and a 409 (it still
 * runs: a voice socket just closed may take a moment to end) is tried again for about 2 s. */
export async function deleteChat(id, { retryWhileRunning = false } = {}) {
  let response;
  for (let attempt = 0; ; attempt++) {
    response = await fetch(chatUrl(id), { method: "DELETE" });
    if (response.status !== 409 || !retryWhileRunning || attempt === 10) break;
    await pause(200);
  }
  if (!response.ok && response.status !== 404) {
    return problem(response, "The chat could not be deleted");
  }
}

/** DELETE /agent/chat/{id}/stream: the server stops the chat's SSE answer (the stream then ends
 * by itself, with all it said). Whether it stopped one; false when nothing was under way or the
 * request failed. */
export async function stopStream(id) {
  const response = await fetch(`${chatUrl(id)}/stream`, { method: "DELETE" }).catch(() => null);
  const answer = response?.ok ? await response.json().catch(() => ({})) : {};
  return !!answer.stopped;
}

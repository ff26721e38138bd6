// The adk-asgi demo page: the stock AI SDK v7 chat against the demo agent mounted at /agent, in
// three modes (transports.js): SSE, Live (WebSocket) and Live + voice. Everything else
// (approvals, browser tools, automatic continuation) is the same in every mode.
// Around the chat, what a chat product has: the user's chats (GET /agent/chats) in a sidebar,
// Stop (with DELETE .../stream over SSE, so the answer itself stops), Regenerate and Retry,
// file attachments, and a message list that follows the answer while the user is at its end.
// This module holds the page: which chat is open, the chat list, opening and deleting chats.
import { useCallback, useEffect, useState } from "react";
import { deleteChat } from "./api.js";
import { ChatView } from "./components/ChatView.jsx";
import { Sidebar } from "./components/Sidebar.jsx";
import { useChatList } from "./hooks/useChatList.js";
import { closeSession, openChat, openFromUrl, reopenChat } from "./session.js";

export function App() {
  const [session, setSession] = useState();
  const [failure, setFailure] = useState();
  const { chats, next, listProblem, setListProblem, refreshChats, loadOlder } = useChatList();
  const [drawer, setDrawer] = useState(false); // the chat list, on a phone
  const [busy, setBusy] = useState(false); // the open chat is answering

  const open = useCallback(
    (promise, { keepDrawer = false } = {}) =>
      promise.then(
        (opened) => {
          setSession(opened);
          setFailure(undefined);
          if (!keepDrawer) setDrawer(false);
        },
        (error) => setFailure(error.message),
      ),
    [],
  );
  // The chat list first: its answer sets the identity cookie that every later request carries
  // (two first requests at once could each be given a new identity).
  useEffect(() => void refreshChats().then((listed) => open(openFromUrl(listed))), [
    refreshChats,
    open,
  ]);

  const mode = session?.mode ?? "sse";
  const current = session?.chat.id;
  const remove = async (id) => {
    setListProblem(undefined);
    const leaving = id === current;
    if (leaving) {
      // a new chat in its place; the server refuses to delete a chat with a live socket open
      await open(openChat(mode), { keepDrawer: true });
      await closeSession(session);
    }
    const trouble = await deleteChat(id, { retryWhileRunning: leaving });
    if (trouble) setListProblem(trouble);
    await refreshChats();
  };

  return (
    <div className={drawer ? "app drawer-open" : "app"}>
      <Sidebar
        chats={chats}
        older={next ? loadOlder : undefined}
        current={current}
        busy={busy}
        listProblem={listProblem}
        onNewChat={() => open(openChat(mode))}
        onClose={() => setDrawer(false)}
        onOpen={(id) => (id === current ? setDrawer(false) : open(reopenChat(mode, id)))}
        onDelete={remove}
      />
      {drawer && <div className="scrim" aria-hidden="true" onClick={() => setDrawer(false)} />}
      <main className="chat">
        {session ? (
          <ChatView
            key={`${session.mode}/${session.chat.id}`}
            session={session}
            drawer={drawer}
            onToggleChats={() => setDrawer(!drawer)}
            onSwitch={(to) =>
              open(
                // a chat with no message yet is not on the server: nothing to load
                session.chat.messages.length
                  ? reopenChat(to, session.chat.id)
                  : openChat(to, session.chat.id),
              )
            }
            onBusy={setBusy}
            onAnswered={refreshChats}
            failure={failure}
          />
        ) : (
          <header className="top">
            <h1>adk-asgi demo</h1>
            {failure && <p className="error">{failure}</p>}
          </header>
        )}
      </main>
    </div>
  );
}

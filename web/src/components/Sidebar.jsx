// The sidebar (a drawer on a phone): New chat, the user's chats, and a word about the demo.
import { page } from "../pageConfig.js";
import { ChatList } from "./ChatList.jsx";

export function Sidebar({
  chats,
  older,
  current,
  busy,
  listProblem,
  onNewChat,
  onClose,
  onOpen,
  onDelete,
}) {
  return (
    <aside
      id="chat-list"
      className="sidebar"
      aria-label="Chats"
      onKeyDown={(event) => event.key === "Escape" && onClose()}
    >
      <div className="sidebar-top">
        <button type="button" className="new-chat primary" onClick={onNewChat}>
          + New chat
        </button>
        <button
          type="button"
          className="close-drawer icon"
          aria-label="Close the chat list"
          onClick={onClose}
        >
          ✕
        </button>
      </div>
      <h2>Chats</h2>
      <ChatList chats={chats} current={current} busy={busy} onOpen={onOpen} onDelete={onDelete} />
      {older && (
        <button type="button" className="older-chats" onClick={older}>
          Older chats
        </button>
      )}
      {listProblem && <p className="error note">{listProblem}</p>}
      {page.intro && <p className="intro">{page.intro}</p>}
    </aside>
  );
}

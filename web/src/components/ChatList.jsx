// The user's chats in the sidebar: each opens the chat, or deletes it (not the open one while it
// answers).
import { TrashIcon } from "./icons.jsx";

export function ChatList({ chats, current, busy, onOpen, onDelete }) {
  if (chats === undefined) return <p className="muted">Loading…</p>;
  if (chats.length === 0) return <p className="muted">No chats yet.</p>;
  return (
    <ul className="chat-list">
      {chats.map(({ id, title, updated }) => {
        const open = id === current;
        const name = title ?? "Untitled chat";
        return (
          <li key={id} data-chat={id} className={open ? "current" : undefined}>
            <button
              type="button"
              className="open-chat"
              aria-current={open ? "page" : undefined}
              title={name}
              onClick={() => onOpen(id)}
            >
              <span className="title">{name}</span>
              <time dateTime={updated}>{when(updated)}</time>
            </button>
            <button
              type="button"
              className="delete-chat icon"
              aria-label={`Delete chat: ${name}`}
              title={open && busy ? "Stop the answer first" : "Delete this chat"}
              disabled={open && busy}
              onClick={() => onDelete(id)}
            >
              <TrashIcon />
            </button>
          </li>
        );
      })}
    </ul>
  );
}

/** When a chat was last updated: the time today, else the day. */
function when(iso) {
  const date = new Date(iso);
  return date.toDateString() === new Date().toDateString()
    ? date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : date.toLocaleDateString([], { month: "short", day: "numeric" });
}

// The chat's top bar: the chat list's toggle (on a phone), the title, the mode switch (SSE, Live,
// Live + voice), the microphone in voice mode, and the chat's status.
import { MODES } from "../transports.js";
import { MenuIcon } from "./icons.jsx";
import { Microphone } from "./Microphone.jsx";

export function ChatHeader({ mode, chat, voice, status, busy, drawer, onToggleChats, onSwitch }) {
  return (
    <header className="top">
      <button
        type="button"
        className="chats-toggle"
        aria-expanded={drawer}
        aria-controls="chat-list"
        onClick={onToggleChats}
      >
        <MenuIcon /> Chats
      </button>
      <h1>adk-asgi demo</h1>
      <div className="modes" role="group" aria-label="Mode">
        {Object.entries(MODES).map(([value, label]) => (
          <button
            type="button"
            key={value}
            aria-pressed={mode === value}
            onClick={() => value !== mode && !busy && onSwitch(value)}
          >
            {label}
          </button>
        ))}
      </div>
      {voice && <Microphone voice={voice} chat={chat} />}
      <span className="status" data-status={status}>
        {status}
      </span>
    </header>
  );
}

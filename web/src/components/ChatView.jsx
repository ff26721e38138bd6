// The open chat: the AI SDK's useChat on the session's Chat, and what the user does with it
// (send, approve, stop, retry, regenerate, attach), laid out as the header, the message list and
// the composer.
import { useChat } from "@ai-sdk/react";
import { useEffect, useRef, useState } from "react";
import { stopStream } from "../api.js";
import { canRegenerate, hasFailed, progressOf } from "../chatState.js";
import { useAttachments } from "../hooks/useAttachments.js";
import { useBusyTracking } from "../hooks/useBusyTracking.js";
import { useFollow } from "../hooks/useFollow.js";
import { ChatHeader } from "./ChatHeader.jsx";
import { Composer } from "./Composer.jsx";
import { MessageList } from "./MessageList.jsx";
import { NowPlaying } from "./NowPlaying.jsx";

export function ChatView({
  session,
  drawer,
  onToggleChats,
  onSwitch,
  onBusy,
  onAnswered,
  failure,
}) {
  const { mode, chat, transport, voice } = session;
  // resume: an answer still streaming when the page was reloaded goes on, replayed from its
  // start (SSE: GET .../stream; live: a `resume` frame on the new socket). Not voice yet: a
  // voice socket reopened on a chat whose last answer was spoken gets a resume that never ends.
  // Not a chat with no message either: nothing to resume (and live, a socket opened for nothing
  // would make the chat exist on the server, an untitled entry in the chat list).
  const {
    messages,
    status,
    error,
    sendMessage,
    regenerate,
    stop,
    setMessages,
    addToolApprovalResponse,
  } = useChat({ chat, resume: mode !== "voice" && chat.messages.length > 0 });
  const [input, setInput] = useState("");
  const inputRef = useRef(null);
  const focusInput = () => inputRef.current?.focus();
  const attachments = useAttachments(focusInput);
  const follower = useFollow();
  const { follow } = follower;
  useEffect(() => () => transport.close?.(), [transport]); // live: close the socket when done
  const busy = status === "submitted" || status === "streaming";
  useBusyTracking(busy, onBusy, onAnswered);

  const send = (text) => {
    if (busy || (!text.trim() && !attachments.files.length)) return false;
    const attached = attachments.attachedParts();
    sendMessage({
      ...(text.trim() ? { text } : {}),
      ...(attached.length ? { files: attached } : {}),
    });
    attachments.clearFiles();
    follow();
    focusInput();
    return true;
  };
  const approve = (id, approved) => {
    addToolApprovalResponse({ id, approved });
    focusInput(); // the card's buttons are gone: back to the input
  };
  const stopAnswer = async () => {
    focusInput();
    // SSE: the answer is resumable, so stop() alone would only stop reading it. The server stops
    // it instead: the stream then ends by itself, with all it said — what history keeps.
    if (mode === "sse" && (await stopStream(chat.id))) return;
    stop(); // live: stops reading (a live turn cannot be cut); SSE: nothing was under way
  };

  const last = messages.at(-1);
  const failed = hasFailed(error, last);
  const retry = () => {
    // SSE: the server rewinds the chat to before the answer and answers again
    if (mode === "sse" && last?.role === "assistant") return void regenerate();
    // live: a connection cannot be rewound, so the last question is asked again as a new message
    const question = messages.findLast((m) => m.role === "user");
    if (!question) return;
    const text = question.parts.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("");
    const attached = question.parts.filter((p) => p.type === "file");
    if (last === question) setMessages(messages.slice(0, -1)); // it was never answered
    sendMessage({ text, ...(attached.length ? { files: attached } : {}) });
    follow();
  };

  return (
    <>
      <ChatHeader
        mode={mode}
        chat={chat}
        voice={voice}
        status={status}
        busy={busy}
        drawer={drawer}
        onToggleChats={onToggleChats}
        onSwitch={onSwitch}
      />
      {failure && <p className="error banner">{failure}</p>}
      <NowPlaying />
      <MessageList
        follower={follower}
        messages={messages}
        progress={progressOf(status, last)}
        busy={busy}
        failed={failed}
        canRegenerate={canRegenerate(mode, last, failed)}
        onApprove={approve}
        onRetry={retry}
        onRegenerate={() => regenerate()}
      />
      <Composer
        chatId={chat.id}
        mode={mode}
        error={error}
        busy={busy}
        input={input}
        inputRef={inputRef}
        onInput={setInput}
        attachments={attachments}
        onSend={send}
        onStop={stopAnswer}
      />
    </>
  );
}

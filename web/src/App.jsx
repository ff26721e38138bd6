// The adk-asgi demo page: the stock AI SDK v7 chat against the demo agent mounted at /agent.
//   SSE    DefaultChatTransport    POST /agent/chat
//   Live   WebSocketChatTransport  WS /agent/live
//   Voice  AdkLiveTransport (served at /agent/transport.js): WS /agent/live?audio=1, microphone
//          up and the model's voice down as PCM frames
// Everything else (approvals, browser tools, automatic continuation) is the same in every mode.
// Around the chat, what a chat product has: the user's chats (GET /agent/chats) in a sidebar,
// Stop (with DELETE .../stream over SSE, so the answer itself stops), Regenerate and Retry,
// file attachments, and a message list that follows the answer while the user is at its end.
import { Chat, useChat } from "@ai-sdk/react";
import {
  DefaultChatTransport,
  generateId,
  lastAssistantMessageIsCompleteWithApprovalResponses as approvalsDone,
  lastAssistantMessageIsCompleteWithToolCalls as toolCallsDone,
  WebSocketChatTransport,
} from "ai";
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from "react";
import { playTrack, stopMusic, useAudio, useNowPlaying } from "./music.js";

const MODES = { sse: "SSE", live: "Live", voice: "Live + voice" };
const EXAMPLES = [
  "What's the weather in Paris?",
  "pay 5 to alice",
  "play track 2",
  "where am i",
  "pay 5 to alice then pay 7 to bob",
  "plan a trip to Rome",
  "explode",
];
const ROOT_AGENT = "demo_agent"; // parts of another agent of the tree are labelled with its name
const TRANSPORT_JS = "/agent/transport.js"; // served by the app, so not bundled
// A request body is at most 4 MiB (AdkApp's max_body_size) and a file goes as a base64 data:
// URL (4/3 of its size), so a message carries at most 2 MiB of files.
const MAX_FILE_BYTES = 2 * 1024 * 1024;
const ACCEPTED_FILES = "image/*,application/pdf,text/plain,text/csv,text/markdown";
const CLOSED = "Closed: a new message was sent";

// --- the tools that run in the browser (called from onToolCall; addToolOutput is not awaited) --

function runBrowserTool(chat, { toolName, toolCallId, input }) {
  const answer = (output) => chat.addToolOutput({ tool: toolName, toolCallId, output });
  const fail = (error) =>
    chat.addToolOutput({ tool: toolName, toolCallId, state: "output-error", errorText: error });
  if (toolName === "change_bgm") {
    try {
      playTrack(input.track);
      answer({ playing: input.track });
    } catch (error) {
      fail(error.message);
    }
  } else if (toolName === "get_location") {
    // onToolCall fires only once the user approved (the server holds the call back until then)
    navigator.geolocation.getCurrentPosition(
      ({ coords }) => answer({ latitude: coords.latitude, longitude: coords.longitude }),
      (error) => fail(`The browser gave no location: ${error.message}`),
    );
  }
}

// --- a chat: the AI SDK's Chat on the transport of a mode ------------------------------------

// The server answers the last message and keeps the rest itself (the session is the truth), so
// only the last one is sent: the files of earlier messages do not go up again with every turn.
const lastMessageOnly = ({ id, messages, body, trigger, messageId }) => ({
  body: { ...body, id, messages: messages.slice(-1), trigger, messageId },
});

/** A WebSocket class that knows its open sockets: `closed()` settles once they all are (the
 * server lets go of a live chat then, so it can be deleted). */
function trackedWebSocket() {
  const open = new Set();
  class TrackedWebSocket extends WebSocket {
    constructor(url, protocols) {
      super(url, protocols);
      open.add(this);
      this.addEventListener("close", () => open.delete(this));
    }
  }
  const closed = () =>
    Promise.all([...open].map((s) => new Promise((r) => s.addEventListener("close", r))));
  return { TrackedWebSocket, closed };
}

async function openChat(mode, id = generateId(), messages = []) {
  let transport;
  let voice;
  let closed = async () => {};
  if (mode === "sse") {
    transport = new DefaultChatTransport({
      api: "/agent/chat",
      prepareSendMessagesRequest: lastMessageOnly,
    });
  } else if (mode === "live") {
    const sockets = trackedWebSocket();
    closed = sockets.closed;
    transport = new WebSocketChatTransport({
      url: "/agent/live",
      webSocket: sockets.TrackedWebSocket,
      prepareSendMessagesRequest: ({ messages }) => ({ messages: messages.slice(-1) }),
    });
  } else {
    const live = await import(/* @vite-ignore */ TRANSPORT_JS);
    const player = live.createPcmPlayer();
    transport = new live.AdkLiveTransport({
      url: "/agent/live",
      params: { chatId: id }, // so the microphone can talk before any message is sent
      sdk: 7,
      audio: true,
      onAudio: (pcm) => player.play(pcm),
      onInterrupted: () => player.stop(),
    });
    voice = {
      startMicrophone: async () => {
        await transport.connect();
        return live.startMicrophone(transport);
      },
    };
  }
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
async function reopenChat(mode, id) {
  const response = await fetch(`/agent/chat/${encodeURIComponent(id)}/messages`);
  if (response.status === 404) return openChat(mode);
  if (!response.ok) throw new Error(await problem(response, "The chat could not be loaded"));
  return openChat(mode, id, await response.json());
}

/** The chat named by the URL (`#<mode>/<chat id>`, after a reload), or a new SSE chat. One not
 * in the user's chat list (`chats`, when known) was never sent: nothing to load. */
async function openFromUrl(chats) {
  const [, mode, id] = location.hash.match(/^#(sse|live|voice)\/([\w.:@-]+)$/) ?? [];
  if (!id) return openChat("sse");
  return chats && !chats.some((chat) => chat.id === id) ? openChat(mode, id) : reopenChat(mode, id);
}

/** What went wrong with a request, for the user: the server's `{"error": ...}` when it sent one. */
async function problem(response, what) {
  const body = await response.json().catch(() => ({}));
  return `${what}: ${body.error ?? `HTTP ${response.status}`}`;
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// --- the page ---------------------------------------------------------------------------------

export function App() {
  const [session, setSession] = useState();
  const [failure, setFailure] = useState();
  const [chats, setChats] = useState();
  const [listProblem, setListProblem] = useState();
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
  /** GET /agent/chats into the sidebar; the list, or undefined when it failed. */
  const refreshChats = useCallback(async () => {
    try {
      const response = await fetch("/agent/chats");
      if (!response.ok) throw new Error(await problem(response, "The chat list"));
      const listed = await response.json();
      setChats(listed);
      setListProblem(undefined);
      return listed;
    } catch (error) {
      setListProblem(error.message);
    }
  }, []);
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
      session.transport.close?.();
      await Promise.race([session.closed(), pause(2000)]);
    }
    let response;
    for (let attempt = 0; ; attempt++) {
      response = await fetch(`/agent/chat/${encodeURIComponent(id)}`, { method: "DELETE" });
      // 409 while the chat runs: a voice socket just closed may take a moment to end
      if (response.status !== 409 || !leaving || attempt === 10) break;
      await pause(200);
    }
    if (!response.ok && response.status !== 404) {
      setListProblem(await problem(response, "The chat could not be deleted"));
    }
    await refreshChats();
  };

  return (
    <div className={drawer ? "app drawer-open" : "app"}>
      <aside
        id="chat-list"
        className="sidebar"
        aria-label="Chats"
        onKeyDown={(event) => event.key === "Escape" && setDrawer(false)}
      >
        <div className="sidebar-top">
          <button type="button" className="new-chat primary" onClick={() => open(openChat(mode))}>
            + New chat
          </button>
          <button
            type="button"
            className="close-drawer icon"
            aria-label="Close the chat list"
            onClick={() => setDrawer(false)}
          >
            ✕
          </button>
        </div>
        <h2>Chats</h2>
        <ChatList
          chats={chats}
          current={current}
          busy={busy}
          onOpen={(id) => (id === current ? setDrawer(false) : open(reopenChat(mode, id)))}
          onDelete={remove}
        />
        {listProblem && <p className="error note">{listProblem}</p>}
        <p className="intro">
          A Google ADK agent served by <code>adk_asgi</code> at <code>/agent</code>, talking to the
          stock Vercel AI SDK chat. Offline it runs a scripted model; set{" "}
          <code>GOOGLE_API_KEY</code> for Gemini.
        </p>
      </aside>
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

function ChatList({ chats, current, busy, onOpen, onDelete }) {
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

function when(iso) {
  const date = new Date(iso);
  return date.toDateString() === new Date().toDateString()
    ? date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : date.toLocaleDateString([], { month: "short", day: "numeric" });
}

// What the music plays, with the AudioContext's state and the notes scheduled so far as data
// attributes (the bgm test checks the music is really playing). Its own component: the note
// count changes several times a second.
function NowPlaying() {
  const track = useNowPlaying();
  const audio = useAudio();
  if (!track) return null;
  return (
    <p className="music" data-audio={audio.state} data-notes={audio.notes}>
      ♪ Now playing: track {track}{" "}
      <button type="button" onClick={stopMusic}>
        Stop music
      </button>
    </p>
  );
}

/** A scroll box that follows its content's end while the user is there: `follow()` after the
 * user sends; scrolling up stops the following (`away`), scrolling back down resumes it. */
function useFollow() {
  const box = useRef(null);
  const following = useRef(true);
  const pinned = useRef(0); // scrollTop as following left it
  const [away, setAway] = useState(false);
  const atEnd = (element) => element.scrollHeight - element.scrollTop - element.clientHeight < 40;
  const follow = useCallback(() => {
    const element = box.current;
    if (!element) return;
    element.scrollTop = element.scrollHeight;
    pinned.current = element.scrollTop;
    following.current = true;
    setAway(false);
  }, []);
  const onScroll = useCallback(() => {
    const element = box.current;
    following.current = atEnd(element);
    if (following.current) pinned.current = element.scrollTop;
    setAway(!following.current);
  }, []);
  // new content (after every render; and whenever the box or its content changes size: an image
  // loaded, the input bar grew): to the end, unless the user scrolled up. The scroll event of
  // that may not have come yet: a scrollTop above where following left it says so too.
  const keepUp = useCallback(() => {
    const element = box.current;
    if (!element || !following.current) return;
    if (element.scrollTop < pinned.current - 1 && !atEnd(element)) {
      following.current = false;
      setAway(true);
      return;
    }
    follow();
  }, [follow]);
  useLayoutEffect(keepUp);
  useEffect(() => {
    const element = box.current;
    const observer = new ResizeObserver(keepUp);
    observer.observe(element);
    if (element.firstElementChild) observer.observe(element.firstElementChild);
    return () => observer.disconnect();
  }, [keepUp]);
  return { box, onScroll, follow, away };
}

function ChatView({ session, drawer, onToggleChats, onSwitch, onBusy, onAnswered, failure }) {
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
  const [files, setFiles] = useState([]); // FileUIPart[] (with their size) to send
  const [notice, setNotice] = useState();
  const inputRef = useRef(null);
  const fileRef = useRef(null);
  const { box, onScroll, follow, away } = useFollow();
  useEffect(() => () => transport.close?.(), [transport]); // live: close the socket when done
  const busy = status === "submitted" || status === "streaming";

  // The chat list shows titles and order as of the last answer: fetch it after each one.
  const wasBusy = useRef(false);
  useEffect(() => {
    onBusy(busy);
    if (wasBusy.current && !busy) onAnswered();
    wasBusy.current = busy;
  }, [busy, onBusy, onAnswered]);

  const focusInput = () => inputRef.current?.focus();
  const send = (text) => {
    if (busy || (!text.trim() && !files.length)) return false;
    const attached = files.map(({ size, ...part }) => part);
    sendMessage({
      ...(text.trim() ? { text } : {}),
      ...(attached.length ? { files: attached } : {}),
    });
    setFiles([]);
    setNotice(undefined);
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
    if (mode === "sse") {
      // The answer is resumable, so stop() alone would only stop reading it. The server stops
      // it instead: the stream then ends by itself, with all it said — what history keeps.
      const response = await fetch(`/agent/chat/${encodeURIComponent(chat.id)}/stream`, {
        method: "DELETE",
      }).catch(() => null);
      const answer = response?.ok ? await response.json().catch(() => ({})) : {};
      if (answer.stopped) return;
    }
    stop(); // live: stops reading (a live turn cannot be cut); SSE: nothing was under way
  };

  const last = messages.at(-1);
  const failed =
    !!error || (last?.role === "assistant" && last.parts.some((p) => p.type === "data-error"));
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

  const addFiles = async (list) => {
    const picked = [...list];
    let room = MAX_FILE_BYTES - files.reduce((total, f) => total + f.size, 0);
    const fitting = [];
    const refused = [];
    for (const file of picked) {
      if (file.size > room) refused.push(file);
      else {
        fitting.push(file);
        room -= file.size;
      }
    }
    setNotice(
      refused.length
        ? `${refused.map((f) => `"${f.name}" (${megabytes(f.size)})`).join(", ")} not attached: ` +
            `a message can carry ${megabytes(MAX_FILE_BYTES)} of files.`
        : undefined,
    );
    const parts = await Promise.all(fitting.map(readFile));
    setFiles((before) => [...before, ...parts]);
    focusInput();
  };

  const progress =
    status === "submitted" || (status === "streaming" && !shows(last))
      ? "thinking"
      : status === "streaming"
        ? "streaming"
        : null;
  // Regenerate: SSE only (a live connection is one invocation, the server cannot rewind it),
  // and not while the answer waits for the user's approval (the card is what to answer)
  const canRegenerate =
    mode === "sse" &&
    last?.role === "assistant" &&
    !failed &&
    !last.parts.some((p) => p.state === "approval-requested");

  return (
    <>
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
      {failure && <p className="error banner">{failure}</p>}
      <NowPlaying />

      <div className="scroll-area">
        <div className="scroller" ref={box} onScroll={onScroll}>
          <section className="messages" aria-live="polite">
            {messages.length === 0 && (
              <p className="empty">Ask something, or pick an example below.</p>
            )}
            {messages.map((message, index) => (
              <Message
                key={message.id}
                message={message}
                closed={index < messages.length - 1}
                onApprove={approve}
              />
            ))}
            {progress && <Progress kind={progress} />}
            {!busy && (failed || canRegenerate) && (
              <div className="actions">
                {failed ? (
                  <button type="button" onClick={retry}>
                    <RetryIcon /> Retry
                  </button>
                ) : (
                  <button type="button" onClick={() => regenerate()}>
                    <RetryIcon /> Regenerate
                  </button>
                )}
              </div>
            )}
          </section>
        </div>
        {away && (
          <button type="button" className="to-latest" onClick={follow}>
            ↓ Latest
          </button>
        )}
      </div>

      <footer className="composer">
        {error && (
          <p className="error" role="alert">
            Error: {error.message}
          </p>
        )}
        <div className="examples">
          {EXAMPLES.map((text) => (
            <button type="button" key={text} disabled={busy} onClick={() => send(text)}>
              {text}
            </button>
          ))}
        </div>
        {files.length > 0 && (
          <ul className="attachments" aria-label="Attachments">
            {files.map((file, index) => (
              <li key={index}>
                <FilePart part={file} />
                <button
                  type="button"
                  className="icon"
                  aria-label={`Remove ${file.filename}`}
                  onClick={() => setFiles(files.filter((_, i) => i !== index))}
                >
                  ✕
                </button>
              </li>
            ))}
          </ul>
        )}
        {notice && (
          <p className="notice" role="status">
            {notice}
          </p>
        )}
        <form
          onSubmit={(event) => {
            event.preventDefault();
            if (send(input)) setInput("");
          }}
        >
          <input
            ref={fileRef}
            type="file"
            multiple
            hidden
            accept={ACCEPTED_FILES}
            aria-label="Files to attach"
            onChange={(event) => {
              void addFiles(event.target.files);
              event.target.value = "";
            }}
          />
          <button
            type="button"
            className="attach icon"
            aria-label="Attach files"
            title={`Attach images, PDF or text (up to ${megabytes(MAX_FILE_BYTES)})`}
            onClick={() => fileRef.current.click()}
          >
            <ClipIcon />
          </button>
          <input
            ref={inputRef}
            className="text"
            aria-label="Message"
            placeholder="Ask something…"
            autoFocus
            value={input}
            onChange={(event) => setInput(event.target.value)}
            onPaste={(event) => {
              const pasted = event.clipboardData.files;
              if (pasted.length) void addFiles(pasted);
            }}
          />
          {busy ? (
            <button type="button" className="stop danger" onClick={stopAnswer}>
              <StopIcon /> Stop
            </button>
          ) : (
            <button type="submit" className="send primary">
              Send
            </button>
          )}
        </form>
        <p className="chat-id">
          chat <code>{chat.id}</code> · {MODES[mode]}
        </p>
      </footer>
    </>
  );
}

/** Whether an assistant message shows anything yet (else the page says it is thinking). */
function shows(message) {
  return (
    message?.role === "assistant" &&
    message.parts.some(
      (p) =>
        (p.type === "text" && p.text) ||
        p.type === "reasoning" ||
        p.type === "file" ||
        p.type === "dynamic-tool" ||
        p.type.startsWith("tool-"),
    )
  );
}

function Progress({ kind }) {
  return (
    <div className="progress" data-progress={kind} role="status">
      <span className="dots" aria-hidden="true">
        <i />
        <i />
        <i />
      </span>
      {kind === "thinking" ? "Thinking…" : "Answering…"}
    </div>
  );
}

function readFile(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () =>
      resolve({
        type: "file",
        mediaType: file.type || "application/octet-stream",
        filename: file.name,
        url: reader.result,
        size: file.size,
      });
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

function megabytes(bytes) {
  return `${(bytes / 1024 / 1024).toFixed(1).replace(/\.0$/, "")} MB`;
}

function Message({ message, closed, onApprove }) {
  return (
    <article className={`message ${message.role}`} data-role={message.role} data-id={message.id}>
      {message.parts.map((part, index) => {
        if (part.type === "text") {
          const author = part.providerMetadata?.adk?.author;
          return (
            <p key={index} data-author={author}>
              {author && author !== ROOT_AGENT && <b className="author">{author}: </b>}
              {part.text}
            </p>
          );
        }
        if (part.type === "file") return <FilePart key={index} part={part} />;
        if (part.type === "reasoning")
          return (
            <p key={index} className="reasoning">
              {part.text}
            </p>
          );
        if (part.type === "data-transcript")
          return (
            <p key={index} className="transcript">
              {part.data.role === "user" ? "You said" : "Heard"}: {part.data.text}
            </p>
          );
        if (part.type === "data-error")
          return (
            <div key={index} className="error-note">
              <b>Error:</b> {part.data?.errorText ?? "An error occurred."}
            </div>
          );
        if (part.type.startsWith("tool-") || part.type === "dynamic-tool")
          return (
            <ToolCard key={part.toolCallId} part={part} closed={closed} onApprove={onApprove} />
          );
        return null;
      })}
    </article>
  );
}

function FilePart({ part }) {
  const image = part.mediaType?.startsWith("image/");
  const name = part.filename || (image ? "image" : "file");
  if (image) return <img className="thumb" src={part.url} alt={name} title={name} />;
  return (
    <a className="file" href={part.url} download={name}>
      <FileIcon /> {name}
    </a>
  );
}

/** A tool call. One still asking for approval on a message the chat has moved past (a new
 * message was sent) is closed: the server no longer takes an answer to it. */
function ToolCard({ part, closed, onApprove }) {
  const name = part.toolName ?? part.type.slice("tool-".length);
  const asking = part.state === "approval-requested";
  const gone = asking && closed;
  return (
    <div
      className="tool"
      data-tool={name}
      data-state={part.state}
      data-closed={gone ? "true" : undefined}
    >
      <div>
        <b>{name}</b> <span className="state">{gone ? "closed" : part.state}</span>
      </div>
      <code>input: {JSON.stringify(part.input ?? {})}</code>
      {asking && !gone && (
        <div className="approval">
          <button
            type="button"
            className="approve primary"
            onClick={() => onApprove(part.approval.id, true)}
          >
            Approve
          </button>
          <button
            type="button"
            className="deny danger-outline"
            onClick={() => onApprove(part.approval.id, false)}
          >
            Deny
          </button>
        </div>
      )}
      {gone && <p className="closed-note">{CLOSED}</p>}
      {part.state === "output-available" && (
        <code className="output">output: {JSON.stringify(part.output)}</code>
      )}
      {part.state === "output-error" && <p className="error">{part.errorText}</p>}
      {part.state === "output-denied" && <p className="denied">denied by the user</p>}
    </div>
  );
}

function Microphone({ voice, chat }) {
  const [mic, setMic] = useState();
  const [trouble, setTrouble] = useState();
  const current = useRef();
  current.current = mic;
  useEffect(() => () => current.current?.stop(), []); // leaving the chat stops the microphone
  const toggle = async () => {
    setTrouble(undefined);
    if (mic) {
      mic.stop();
      setMic(undefined);
      chat.resumeStream(); // the model answers a voice turn without a request: fetch it
      return;
    }
    try {
      setMic(await voice.startMicrophone());
    } catch (error) {
      setTrouble(`Microphone: ${error.message}`);
    }
  };
  return (
    <>
      <button type="button" className={mic ? "mic on" : "mic"} onClick={toggle}>
        {mic ? "Stop talking" : "Talk"}
      </button>
      {trouble && <span className="error">{trouble}</span>}
    </>
  );
}

// --- icons (inline SVG, no icon font) ----------------------------------------------------------

const svg = (path) =>
  function Icon() {
    return (
      <svg viewBox="0 0 24 24" width="18" height="18" aria-hidden="true" focusable="false">
        <path
          d={path}
          fill="none"
          stroke="currentColor"
          strokeWidth="2"
          strokeLinecap="round"
          strokeLinejoin="round"
        />
      </svg>
    );
  };
const MenuIcon = svg("M4 6h16M4 12h16M4 18h16");
const TrashIcon = svg("M4 7h16M9 7V4h6v3M6 7l1 13h10l1-13");
const ClipIcon = svg(
  "M21 11.5l-8.5 8.5a5 5 0 0 1-7-7l9-9a3.5 3.5 0 0 1 5 5l-9 9a2 2 0 0 1-3-3l8.5-8.5",
);
const StopIcon = svg("M7 7h10v10H7z");
const RetryIcon = svg("M4 12a8 8 0 1 0 2.3-5.6M4 4v4h4");
const FileIcon = svg("M6 3h8l4 4v14H6zM14 3v4h4");

// The adk-asgi demo page: the stock AI SDK v7 chat against the demo agent mounted at /agent.
//   SSE    DefaultChatTransport    POST /agent/chat
//   Live   WebSocketChatTransport  WS /agent/live
//   Voice  AdkLiveTransport (served at /agent/transport.js): WS /agent/live?audio=1, microphone
//          up and the model's voice down as PCM frames
// Everything else (approvals, browser tools, automatic continuation) is the same in every mode.
import { Chat, useChat } from "@ai-sdk/react";
import {
  DefaultChatTransport,
  generateId,
  lastAssistantMessageIsCompleteWithApprovalResponses as approvalsDone,
  lastAssistantMessageIsCompleteWithToolCalls as toolCallsDone,
  WebSocketChatTransport,
} from "ai";
import { useEffect, useRef, useState } from "react";
import { playTrack, stopMusic, useAudio, useNowPlaying } from "./music.js";

const MODES = { sse: "SSE", live: "Live", voice: "Live + voice" };
const EXAMPLES = [
  "What's the weather in Paris?",
  "pay 5 to alice",
  "play track 2",
  "where am i",
  "pay 5 to alice then pay 7 to bob",
  "explode",
];
const TRANSPORT_JS = "/agent/transport.js"; // served by the app, so not bundled

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

async function openChat(mode, id = generateId(), messages = []) {
  let transport;
  let voice;
  if (mode === "sse") {
    transport = new DefaultChatTransport({ api: "/agent/chat" });
  } else if (mode === "live") {
    transport = new WebSocketChatTransport({ url: "/agent/live" });
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
  return { mode, chat, transport, voice };
}

/** Chat `id` as the server has it (`GET /agent/chat/{id}/messages`), on the transport of `mode`:
 * after a reload, or to go on in another mode (a payment waiting for approval included). */
async function reopenChat(mode, id) {
  const response = await fetch(`/agent/chat/${id}/messages`);
  return openChat(mode, id, response.ok ? await response.json() : []);
}

/** The chat named by the URL (`#<mode>/<chat id>`, after a reload), or a new SSE chat. */
async function openFromUrl() {
  const [, mode, id] = location.hash.match(/^#(sse|live|voice)\/([\w.:@-]+)$/) ?? [];
  return id ? reopenChat(mode, id) : openChat("sse");
}

// --- the page ---------------------------------------------------------------------------------

export function App() {
  const [session, setSession] = useState();
  const [failure, setFailure] = useState();
  const open = (promise) => promise.then(setSession, (error) => setFailure(error.message));
  useEffect(() => void open(openFromUrl()), []);

  return (
    <main>
      <h1>adk-asgi demo</h1>
      <p className="intro">
        A Google ADK agent served by <code>adk_asgi</code> at <code>/agent</code>, talking to the
        stock Vercel AI SDK chat. Offline it runs a scripted model; set{" "}
        <code>GOOGLE_API_KEY</code> for Gemini.
      </p>
      {failure && <p className="error">{failure}</p>}
      {session && (
        <ChatView
          key={`${session.mode}/${session.chat.id}`}
          session={session}
          onOpen={(mode) => open(openChat(mode))}
          onSwitch={(mode) => open(reopenChat(mode, session.chat.id))}
        />
      )}
    </main>
  );
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
        Stop
      </button>
    </p>
  );
}

function ChatView({ session, onOpen, onSwitch }) {
  const { mode, chat, transport, voice } = session;
  // resume: an answer still streaming when the page was reloaded goes on, replayed from its
  // start (SSE: GET .../stream; live: a `resume` frame on the new socket). Not voice yet: a
  // voice socket reopened on a chat whose last answer was spoken gets a resume that never ends.
  const { messages, status, error, sendMessage, addToolApprovalResponse } = useChat({
    chat,
    resume: mode !== "voice",
  });
  const [input, setInput] = useState("");
  useEffect(() => () => transport.close?.(), [transport]); // live: close the socket when done
  const busy = status === "submitted" || status === "streaming";

  const send = (text) => {
    if (text.trim() && !busy) sendMessage({ text });
  };
  const approve = (id, approved) => addToolApprovalResponse({ id, approved });

  return (
    <>
      <div className="bar">
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
        <button type="button" onClick={() => onOpen(mode)}>
          New chat
        </button>
        {voice && <Microphone voice={voice} chat={chat} />}
        <span className="status" data-status={status}>
          {status}
        </span>
      </div>
      <NowPlaying />

      <div className="examples">
        {EXAMPLES.map((text) => (
          <button type="button" key={text} disabled={busy} onClick={() => send(text)}>
            {text}
          </button>
        ))}
      </div>

      <section className="messages" aria-live="polite">
        {messages.map((message) => (
          <Message key={message.id} message={message} onApprove={approve} />
        ))}
      </section>
      {error && (
        <p className="error" role="alert">
          Error: {error.message}
        </p>
      )}

      <form
        onSubmit={(event) => {
          event.preventDefault();
          send(input);
          setInput("");
        }}
      >
        <input
          aria-label="Message"
          placeholder="Ask something…"
          value={input}
          onChange={(event) => setInput(event.target.value)}
        />
        <button type="submit" disabled={busy}>
          Send
        </button>
      </form>
      <p className="chat-id">
        chat <code>{chat.id}</code> · {MODES[mode]}
      </p>
    </>
  );
}

function Message({ message, onApprove }) {
  return (
    <article className={`message ${message.role}`} data-role={message.role}>
      {message.parts.map((part, index) => {
        if (part.type === "text") return <p key={index}>{part.text}</p>;
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
        if (part.type.startsWith("tool-") || part.type === "dynamic-tool")
          return <ToolCard key={part.toolCallId} part={part} onApprove={onApprove} />;
        return null;
      })}
    </article>
  );
}

function ToolCard({ part, onApprove }) {
  const name = part.toolName ?? part.type.slice("tool-".length);
  return (
    <div className="tool" data-tool={name} data-state={part.state}>
      <div>
        <b>{name}</b> <span className="state">{part.state}</span>
      </div>
      <code>input: {JSON.stringify(part.input ?? {})}</code>
      {part.state === "approval-requested" && (
        <div className="approval">
          <button type="button" onClick={() => onApprove(part.approval.id, true)}>
            Approve
          </button>
          <button type="button" onClick={() => onApprove(part.approval.id, false)}>
            Deny
          </button>
        </div>
      )}
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
  const [problem, setProblem] = useState();
  const current = useRef();
  current.current = mic;
  useEffect(() => () => current.current?.stop(), []); // leaving the chat stops the microphone
  const toggle = async () => {
    setProblem(undefined);
    if (mic) {
      mic.stop();
      setMic(undefined);
      chat.resumeStream(); // the model answers a voice turn without a request: fetch it
      return;
    }
    try {
      setMic(await voice.startMicrophone());
    } catch (error) {
      setProblem(`Microphone: ${error.message}`);
    }
  };
  return (
    <>
      <button type="button" className={mic ? "mic on" : "mic"} onClick={toggle}>
        {mic ? "Stop talking" : "Talk"}
      </button>
      {problem && <span className="error">{problem}</span>}
    </>
  );
}

// The transport of each mode of the page, for the AI SDK's Chat:
//   SSE    DefaultChatTransport    POST /agent/chat
//   Live   WebSocketChatTransport  WS /agent/live
//   Voice  AdkLiveTransport (served at /agent/transport.js): WS /agent/live?audio=1, microphone
//          up and the model's voice down as PCM frames
import { DefaultChatTransport, WebSocketChatTransport } from "ai";

export const MODES = { sse: "SSE", live: "Live", voice: "Live + voice" };
const TRANSPORT_JS = "/agent/transport.js"; // served by the app, so not bundled

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

/** The transport of `mode` for chat `id`: `{ transport, voice, closed }`, where `voice` (voice
 * mode only) starts the microphone and `closed()` settles once the chat's sockets are closed. */
export async function createTransport(mode, id) {
  if (mode === "sse") {
    const transport = new DefaultChatTransport({
      api: "/agent/chat",
      prepareSendMessagesRequest: lastMessageOnly,
    });
    return { transport, voice: undefined, closed: async () => {} };
  }
  if (mode === "live") {
    const sockets = trackedWebSocket();
    const transport = new WebSocketChatTransport({
      url: "/agent/live",
      webSocket: sockets.TrackedWebSocket,
      prepareSendMessagesRequest: ({ messages }) => ({ messages: messages.slice(-1) }),
    });
    return { transport, voice: undefined, closed: sockets.closed };
  }
  const live = await import(/* @vite-ignore */ TRANSPORT_JS);
  const player = live.createPcmPlayer();
  const transport = new live.AdkLiveTransport({
    url: "/agent/live",
    params: { chatId: id }, // so the microphone can talk before any message is sent
    sdk: 7,
    audio: true,
    onAudio: (pcm) => player.play(pcm),
    onInterrupted: () => player.stop(),
  });
  const voice = {
    startMicrophone: async () => {
      await transport.connect();
      return live.startMicrophone(transport);
    },
  };
  return { transport, voice, closed: async () => {} };
}

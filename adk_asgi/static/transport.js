// adk-asgi live transport: an AI SDK `ChatTransport` over the `WS /live` route of an AdkApp.
//
// It speaks the same frames as the AI SDK v7 `WebSocketChatTransport` (client `send` / `resume` /
// `abort`, server `start` / `chunk{sequence}` / `end` / `error` / `no-active`), so it gives AI SDK
// v5 and v6 clients live mode, and it adds the audio extension: binary frames of PCM16 mono audio
// (16 kHz up, 24 kHz down), `activity-start` / `activity-end` / `audio-end` frames up and an
// `interrupted` frame down. Served by the app at `GET <mount>/transport.js`; no dependencies.
// `sdk` is the major version of the page's `ai` package: 6 (the default) or 5; the server sends
// only the chunks that version parses (docs/ai-sdk-versions.md).
//
//   import { AdkLiveTransport, startMicrophone, createPcmPlayer } from "/agent/transport.js";
//   const player = createPcmPlayer();
//   const transport = new AdkLiveTransport({
//     url: "/agent/live", sdk: 6, audio: true,
//     onAudio: (pcm) => player.play(pcm), onInterrupted: () => player.stop(),
//   });
//   const chat = new Chat({ transport, sendAutomaticallyWhen: ... });
//   const mic = await startMicrophone(transport);   // ... mic.stop()

const OPEN = 1;

function makeId() {
  return Math.random().toString(36).slice(2) + Date.now().toString(36);
}

function abortError() {
  const error = new Error("The live chat request was aborted.");
  error.name = "AbortError";
  return error;
}

export class AdkLiveTransport {
  constructor({
    url,
    params = {},
    webSocket = globalThis.WebSocket,
    sdk = 6,
    audio = false,
    body = {},
    onAudio = undefined,
    onInterrupted = undefined,
  }) {
    this.url = url;
    this.params = params;
    this.WebSocket = webSocket;
    this.sdk = sdk;
    this.audio = audio;
    this.body = body;
    this.onAudio = onAudio;
    this.onInterrupted = onInterrupted;
    this.socket = undefined;
    this.opening = undefined;
    this.requests = new Map();
  }

  async sendMessages({ chatId, messages, trigger, messageId, abortSignal, headers, body, metadata }) {
    const socket = await this.connect(abortSignal);
    const requestId = makeId();
    const stream = this.track(requestId, abortSignal);
    socket.send(
      JSON.stringify({
        type: "send",
        requestId,
        id: chatId,
        trigger,
        messageId,
        messages,
        headers: headers ?? {},
        body: { ...this.body, ...(body ?? {}) },
        metadata,
      }),
    );
    return stream;
  }

  async reconnectToStream({ chatId, abortSignal, headers, body, metadata }) {
    const socket = await this.connect(abortSignal);
    const requestId = makeId();
    const stream = this.track(requestId, abortSignal);
    const request = this.requests.get(requestId);
    const answered = new Promise((resolve) => {
      request.onStart = () => resolve(stream);
      request.onNoActive = () => resolve(null);
    });
    socket.send(
      JSON.stringify({
        type: "resume",
        requestId,
        id: chatId,
        lastSequence: undefined,
        headers: headers ?? {},
        body: { ...this.body, ...(body ?? {}) },
        metadata,
      }),
    );
    return answered;
  }

  close() {
    const socket = this.socket;
    this.socket = undefined;
    this.opening = undefined;
    this.failAll(new TypeError("The live chat transport was closed."));
    if (socket) socket.close(1000);
  }

  // --- audio extension ---------------------------------------------------------------------

  sendAudio(pcm16) {
    if (this.socket?.readyState === OPEN) this.socket.send(pcm16);
  }

  activityStart() {
    this.sendControl("activity-start");
  }

  activityEnd() {
    this.sendControl("activity-end");
  }

  audioEnd() {
    this.sendControl("audio-end");
  }

  sendControl(type) {
    if (this.socket?.readyState === OPEN) this.socket.send(JSON.stringify({ type }));
  }

  // --- connection --------------------------------------------------------------------------

  connect(abortSignal) {
    if (abortSignal?.aborted) return Promise.reject(abortError());
    if (this.socket?.readyState === OPEN) return Promise.resolve(this.socket);
    if (!this.opening) {
      const base = typeof location === "undefined" ? undefined : location.href;
      const url = new URL(this.url, base);
      url.protocol = url.protocol.replace(/^http/, "ws");
      const params = { ...this.params, sdk: String(this.sdk) };
      if (this.audio) params.audio = "1";
      for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
      this.opening = new Promise((resolve, reject) => {
        const socket = new this.WebSocket(url.toString());
        socket.binaryType = "arraybuffer";
        socket.onopen = () => {
          this.socket = socket;
          resolve(socket);
        };
        socket.onerror = () => reject(new TypeError("Live chat network connection failed."));
        socket.onclose = (event) => {
          if (this.socket === socket || this.opening) {
            this.socket = undefined;
            this.opening = undefined;
          }
          this.failAll(new TypeError(`Live chat network connection closed (code ${event.code}).`));
          reject(new TypeError("Live chat network connection closed."));
        };
        socket.onmessage = (event) => this.receive(event.data);
      });
    }
    return this.opening;
  }

  receive(data) {
    if (typeof data !== "string") {
      this.onAudio?.(data instanceof ArrayBuffer ? data : data.buffer);
      return;
    }
    let frame;
    try {
      frame = JSON.parse(data);
    } catch {
      return;
    }
    if (frame.type === "interrupted") {
      this.onInterrupted?.();
      return;
    }
    const request = this.requests.get(frame.requestId);
    if (!request) return;
    switch (frame.type) {
      case "start":
        request.onStart?.();
        break;
      case "chunk":
        if (frame.sequence <= request.lastSequence) return;
        request.onStart?.();
        request.lastSequence = frame.sequence;
        request.controller.enqueue(frame.chunk);
        break;
      case "end":
        request.onStart?.();
        this.requests.delete(frame.requestId);
        request.controller.close();
        break;
      case "no-active":
        request.onNoActive?.();
        this.requests.delete(frame.requestId);
        request.controller.close();
        break;
      case "error":
        this.requests.delete(frame.requestId);
        request.onNoActive?.();
        request.controller.error(new Error(frame.errorText ?? "The live chat server returned an error."));
        break;
    }
  }

  track(requestId, abortSignal) {
    const request = { lastSequence: -1, controller: undefined };
    const stream = new ReadableStream({
      start: (controller) => {
        request.controller = controller;
      },
      cancel: () => this.abort(requestId),
    });
    this.requests.set(requestId, request);
    abortSignal?.addEventListener(
      "abort",
      () => {
        if (!this.requests.has(requestId)) return;
        this.abort(requestId);
        try {
          request.controller.close();
        } catch {
          // already closed
        }
      },
      { once: true },
    );
    return stream;
  }

  abort(requestId) {
    this.requests.delete(requestId);
    if (this.socket?.readyState === OPEN) {
      this.socket.send(JSON.stringify({ type: "abort", requestId }));
    }
  }

  failAll(error) {
    for (const request of this.requests.values()) {
      request.onNoActive?.();
      try {
        request.controller.error(error);
      } catch {
        // already closed
      }
    }
    this.requests.clear();
  }
}

// --- microphone capture (PCM16, 16 kHz, mono) -----------------------------------------------

const CAPTURE_WORKLET = `
class Capture extends AudioWorkletProcessor {
  process(inputs) {
    const channel = inputs[0] && inputs[0][0];
    if (channel) this.port.postMessage(channel.slice(0));
    return true;
  }
}
registerProcessor("adk-capture", Capture);
`;

function toPcm16(samples, fromRate, toRate) {
  const ratio = fromRate / toRate;
  const length = Math.floor(samples.length / ratio);
  const out = new Int16Array(length);
  for (let i = 0; i < length; i++) {
    const s = Math.max(-1, Math.min(1, samples[Math.floor(i * ratio)]));
    out[i] = s < 0 ? s * 0x8000 : s * 0x7fff;
  }
  return out;
}

export async function startMicrophone(transport, { sampleRate = 16000 } = {}) {
  const media = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1 } });
  const context = new AudioContext();
  const url = URL.createObjectURL(new Blob([CAPTURE_WORKLET], { type: "text/javascript" }));
  await context.audioWorklet.addModule(url);
  URL.revokeObjectURL(url);
  const source = context.createMediaStreamSource(media);
  const node = new AudioWorkletNode(context, "adk-capture");
  node.port.onmessage = (event) => {
    transport.sendAudio(toPcm16(event.data, context.sampleRate, sampleRate).buffer);
  };
  source.connect(node);
  transport.activityStart();
  return {
    stop() {
      transport.activityEnd();
      source.disconnect();
      node.disconnect();
      for (const track of media.getTracks()) track.stop();
      void context.close();
    },
  };
}

// --- playback of the model's audio (PCM16, 24 kHz, mono) ------------------------------------

export function createPcmPlayer({ sampleRate = 24000 } = {}) {
  let context;
  let next = 0;
  const playing = new Set();
  let carry; // a frame may split a sample: its odd last byte waits for the next frame
  return {
    play(buffer) {
      let bytes = new Uint8Array(buffer);
      if (carry !== undefined) {
        const joined = new Uint8Array(bytes.length + 1);
        joined[0] = carry;
        joined.set(bytes, 1);
        bytes = joined;
      }
      carry = bytes.length % 2 ? bytes[bytes.length - 1] : undefined;
      const pcm = new Int16Array(bytes.slice(0, bytes.length - (bytes.length % 2)).buffer);
      if (pcm.length === 0) return;
      context ??= new AudioContext({ sampleRate });
      const audio = context.createBuffer(1, pcm.length, sampleRate);
      const channel = audio.getChannelData(0);
      for (let i = 0; i < pcm.length; i++) channel[i] = pcm[i] / 0x8000;
      const source = context.createBufferSource();
      source.buffer = audio;
      source.connect(context.destination);
      next = Math.max(next, context.currentTime);
      source.start(next);
      next += audio.duration;
      playing.add(source);
      source.onended = () => playing.delete(source);
    },
    stop() {
      for (const source of playing) source.stop();
      playing.clear();
      next = 0;
      carry = undefined;
    },
  };
}

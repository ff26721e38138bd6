// TEST FIXTURE, not used by the driver itself: a minimal stand-in for the server's own
// `GET /agent/transport.js` (class AdkLiveTransport), which tests/e2e/test_node_harness.py serves
// over HTTP to exercise the driver's "ws-js" mode. It imports nothing (the driver loads it from a
// temp file) and speaks the frames of ai@7's WebSocketChatTransport:
//   client -> server  {type:'send', requestId, id, trigger, messageId, messages, headers, body,
//                      metadata} | {type:'resume', requestId, id, lastSequence, headers, body,
//                      metadata} | {type:'abort', requestId}
//   server -> client  {type:'start'|'end'|'no-active', requestId}
//                     | {type:'chunk', requestId, sequence, chunk}
//                     | {type:'error', requestId, errorText?}
// It implements the AI SDK ChatTransport interface (v6 and v7): sendMessages, reconnectToStream,
// close. Chunks are not schema-validated.

const OPEN = 1;

function headersRecord(headers) {
  if (headers == null) {
    return {};
  }
  return Object.fromEntries(new Headers(headers).entries());
}

function abortError() {
  const err = new Error('The WebSocket chat request was aborted.');
  err.name = 'AbortError';
  return err;
}

export class AdkLiveTransport {
  resumeStreamIsReplay = true;

  #url;
  #params;
  #headers;
  #body;
  #protocols;
  #WebSocket;
  #socket;
  #opening;
  #requests = new Map();
  #counter = 0;

  constructor({ url, params, protocols, webSocket, headers, body } = {}) {
    this.#url = url;
    this.#params = params;
    this.#headers = headers;
    this.#body = body;
    this.#protocols = protocols;
    this.#WebSocket = webSocket ?? globalThis.WebSocket;
  }

  async sendMessages(options) {
    const { chatId, messages, trigger, messageId, headers, body, metadata, abortSignal } = options;
    const request = this.#register('send', abortSignal);
    await this.#send({
      type: 'send',
      requestId: request.requestId,
      id: chatId,
      trigger,
      messageId,
      messages,
      headers: { ...headersRecord(this.#headers), ...headersRecord(headers) },
      body: { ...this.#body, ...body },
      metadata,
    }, request);
    return request.stream;
  }

  async reconnectToStream({ chatId, headers, body, metadata, abortSignal }) {
    const request = this.#register('resume', abortSignal);
    const response = new Promise((resolve, reject) => {
      request.settle = (value, error) => {
        request.settle = null;
        if (error) {
          reject(error);
        } else {
          resolve(value);
        }
      };
    });
    response.catch(() => {});
    await this.#send({
      type: 'resume',
      requestId: request.requestId,
      id: chatId,
      headers: { ...headersRecord(this.#headers), ...headersRecord(headers) },
      body: { ...this.#body, ...body },
      metadata,
    }, request);
    return response;
  }

  close() {
    const socket = this.#socket;
    this.#socket = undefined;
    this.#opening = undefined;
    this.#failAll(new Error('WebSocket chat transport was closed.'));
    if (socket != null && socket.readyState <= OPEN) {
      socket.close(1000, 'Client closed transport');
    }
  }

  #register(kind, abortSignal) {
    if (abortSignal?.aborted) {
      throw abortError();
    }
    const requestId = `r${++this.#counter}`;
    const request = { requestId, kind, lastSequence: -1, settle: null, controller: null };
    request.stream = new ReadableStream({
      start: controller => {
        request.controller = controller;
      },
      cancel: () => this.#abort(request, false),
    });
    abortSignal?.addEventListener('abort', () => this.#abort(request, true), { once: true });
    this.#requests.set(requestId, request);
    return request;
  }

  async #send(frame, request) {
    try {
      const socket = await this.#connect();
      socket.send(JSON.stringify(frame));
    } catch (err) {
      this.#finish(request, err);
      throw err;
    }
  }

  #connect() {
    if (this.#socket?.readyState === OPEN) {
      return Promise.resolve(this.#socket);
    }
    if (this.#opening == null) {
      this.#opening = new Promise((resolve, reject) => {
        const url = new URL(this.#url);
        for (const [key, value] of Object.entries(this.#params ?? {})) {
          url.searchParams.set(key, value);
        }
        const socket = new this.#WebSocket(url.href, this.#protocols);
        this.#socket = socket;
        const lost = message => {
          if (this.#socket !== socket) {
            return;
          }
          this.#socket = undefined;
          this.#opening = undefined;
          const err = new TypeError(message);
          reject(err);
          this.#failAll(err);
        };
        socket.onopen = () => resolve(socket);
        socket.onerror = () => lost('WebSocket chat network connection failed.');
        socket.onclose = event =>
          lost(`WebSocket chat network connection closed (code ${event.code}).`);
        socket.onmessage = event => {
          const text =
            typeof event.data === 'string' ? event.data : new TextDecoder().decode(event.data);
          this.#onFrame(JSON.parse(text));
        };
      });
    }
    return this.#opening;
  }

  #onFrame(frame) {
    const request = this.#requests.get(frame.requestId);
    if (request == null) {
      return;
    }
    switch (frame.type) {
      case 'start':
        request.settle?.(request.stream);
        return;
      case 'chunk':
        if (frame.sequence <= request.lastSequence) {
          return; // a duplicate
        }
        request.lastSequence = frame.sequence;
        request.settle?.(request.stream);
        request.controller.enqueue(frame.chunk);
        return;
      case 'end':
        request.settle?.(request.stream);
        this.#finish(request);
        return;
      case 'no-active':
        request.settle?.(null);
        this.#finish(request);
        return;
      case 'error':
        this.#finish(
          request,
          new Error(frame.errorText ?? 'WebSocket chat server returned an error.'),
        );
        return;
      default:
        this.#finish(request, new Error(`Unknown WebSocket chat response type: ${frame.type}.`));
    }
  }

  /** Removes the request; closes its stream, or errors it (and rejects a pending resume). */
  #finish(request, error) {
    if (!this.#requests.delete(request.requestId)) {
      return;
    }
    request.settle?.(undefined, error);
    try {
      if (error) {
        request.controller.error(error);
      } else {
        request.controller.close();
      }
    } catch {
      // already closed or canceled
    }
  }

  #abort(request, closeStream) {
    if (!this.#requests.has(request.requestId)) {
      return;
    }
    this.#requests.delete(request.requestId);
    request.settle?.(undefined, abortError());
    if (closeStream) {
      try {
        request.controller.close();
      } catch {
        // already closed or canceled
      }
    }
    if (this.#socket?.readyState === OPEN) {
      this.#socket.send(JSON.stringify({ type: 'abort', requestId: request.requestId }));
    }
  }

  #failAll(error) {
    for (const request of [...this.#requests.values()]) {
      this.#finish(request, error);
    }
  }
}

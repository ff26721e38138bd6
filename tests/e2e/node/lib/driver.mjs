// The chat driver: the SDK's own AbstractChat (as NodeChat) + a transport (the stock
// DefaultChatTransport, the stock v7 WebSocketChatTransport, or the server's own transport module),
// talking to a live server, scripted by a JSON spec. See chat-driver.mjs for the spec format.

import { errorText, UsageError } from './cli.mjs';
import { nodeChatClass } from './node-chat.mjs';
import {
  headerValue,
  importModuleFromUrl,
  recordingWebSocketClass,
  waitSocketsClosed,
} from './ws.mjs';

const DEFAULTS = {
  transport: 'sse',
  sendAutomaticallyWhen: 'or',
  maxRequests: 10,
  idleMs: 300,
  timeoutMs: 30000,
};

const TRANSPORTS = ['sse', 'ws', 'ws-js'];

// How long the end of a run waits for the WebSocket close handshakes.
const CLOSE_WAIT_MS = 1000;

const STEP_KINDS = [
  'send',
  'wait',
  'sleep',
  'until',
  'addToolOutput',
  'approve',
  'regenerate',
  'resume',
  'reload',
  'stop',
  'leave',
  'resend',
];

function toolNameOf(part) {
  return part.type === 'dynamic-tool' ? part.toolName : part.type.slice('tool-'.length);
}

function isObject(value) {
  return value != null && typeof value === 'object' && !Array.isArray(value);
}

function stepKind(step) {
  if (!isObject(step)) {
    throw new UsageError(`each step must be an object, got ${JSON.stringify(step)}`);
  }
  const kinds = Object.keys(step).filter(key => STEP_KINDS.includes(key));
  if (kinds.length !== 1) {
    throw new UsageError(
      `each step needs exactly one of ${STEP_KINDS.join(', ')}; got ${JSON.stringify(step)}`,
    );
  }
  return kinds[0];
}

export function normalizeSpec(spec) {
  if (!isObject(spec)) {
    throw new UsageError('the spec must be a JSON object');
  }
  const merged = { ...DEFAULTS, ...spec };
  if (!TRANSPORTS.includes(merged.transport)) {
    throw new UsageError(
      `spec.transport must be ${TRANSPORTS.join('|')}, got ${JSON.stringify(merged.transport)}`,
    );
  }
  if (merged.transport === 'sse') {
    if (typeof merged.api !== 'string') {
      throw new UsageError('spec.api (the chat endpoint URL) is required');
    }
  } else {
    if (typeof merged.wsUrl !== 'string') {
      throw new UsageError(`spec.wsUrl is required with transport ${merged.transport}`);
    }
    if (merged.transport === 'ws-js' && typeof merged.transportJsUrl !== 'string') {
      throw new UsageError('spec.transportJsUrl is required with transport ws-js');
    }
    for (const key of ['wsParams', 'handshakeHeaders', 'wsTransportOptions', 'headers']) {
      if (merged[key] !== undefined && !isObject(merged[key])) {
        throw new UsageError(`spec.${key} must be an object`);
      }
    }
  }
  if (!['or', 'approvals', 'toolCalls', 'none'].includes(merged.sendAutomaticallyWhen)) {
    throw new UsageError(
      `spec.sendAutomaticallyWhen must be or|approvals|toolCalls|none, got ` +
        JSON.stringify(merged.sendAutomaticallyWhen),
    );
  }
  const lastOnly = merged.prepareSendMessagesRequest;
  if (lastOnly !== undefined) {
    if (merged.transport !== 'sse' || !LAST_MESSAGE_ONLY.includes(lastOnly)) {
      throw new UsageError(
        `spec.prepareSendMessagesRequest (sse only) must be ${LAST_MESSAGE_ONLY.join('|')}, ` +
          `got ${JSON.stringify(lastOnly)}`,
      );
    }
  }
  merged.steps = merged.steps ?? [];
  if (!Array.isArray(merged.steps)) {
    throw new UsageError('spec.steps must be a list');
  }
  merged.steps.forEach(stepKind);
  merged.duplicateRequests = merged.duplicateRequests ?? [];
  if (
    !Array.isArray(merged.duplicateRequests) ||
    !merged.duplicateRequests.every(Number.isInteger)
  ) {
    throw new UsageError('spec.duplicateRequests must be a list of request indexes');
  }
  merged.clientTools = merged.clientTools ?? {};
  merged.approvals = merged.approvals ?? {};
  return merged;
}

function normalizeDecision(toolName, decision) {
  if (typeof decision === 'boolean') {
    return { approved: decision };
  }
  if (isObject(decision) && typeof decision.approved === 'boolean') {
    return decision.reason === undefined
      ? { approved: decision.approved }
      : { approved: decision.approved, reason: decision.reason };
  }
  throw new UsageError(`approvals.${toolName}: bad decision ${JSON.stringify(decision)}`);
}

export class ChatDriver {
  constructor(loaded, rawSpec) {
    this.loaded = loaded;
    this.ai = loaded.ai;
    this.spec = normalizeSpec(rawSpec);
    this.NodeChat = nodeChatClass(this.ai.AbstractChat);
    this.live = this.spec.transport !== 'sse';
    if (this.spec.transport === 'ws' && this.ai.WebSocketChatTransport == null) {
      throw new UsageError(
        'transport "ws" (the stock WebSocketChatTransport) needs ai@7; ' +
          `ai@${loaded.info.ai.version} has none (use "ws-js" with sdk 5 or 6)`,
      );
    }
    // ai@5 has no approvals: no approval-requested parts, no addToolApprovalResponse.
    this.v5 = loaded.sdk === 5;
    const approves = this.spec.steps.some(step => 'approve' in step);
    if (this.v5 && (Object.keys(this.spec.approvals).length > 0 || approves)) {
      throw new UsageError('ai@5 has no tool approvals: drop spec.approvals and the approve steps');
    }
    if (this.v5 && this.spec.sendAutomaticallyWhen === 'approvals') {
      throw new UsageError('ai@5 has no lastAssistantMessageIsCompleteWithApprovalResponses');
    }

    // Queues (consumed in order) of client-tool answers and approval decisions.
    this.clientToolAnswers = new Map();
    for (const [name, answer] of Object.entries(this.spec.clientTools)) {
      this.clientToolAnswers.set(name, Array.isArray(answer) ? [...answer] : answer);
    }
    this.approvalQueues = new Map();
    for (const [name, decisions] of Object.entries(this.spec.approvals)) {
      const list = Array.isArray(decisions) ? decisions : [decisions];
      this.approvalQueues.set(
        name,
        list.map(d => normalizeDecision(name, d)),
      );
    }

    this.requests = [];
    this.responses = [];
    // SSE: what each request sent, as sent (url, method, headers, raw body), for resend steps.
    this.sent = [];
    this.resends = [];
    this.duplicates = [];
    this.stops = [];
    // Live (WebSocket) modes.
    this.frames = [];
    this.sockets = [];
    this.socketInfos = [];
    this.sendCalls = 0;
    this.transportModule = null;
    this.TransportClass = null;
    this.WebSocketClass = null;

    this.toolCalls = [];
    this.approvalsGiven = [];
    this.finishes = [];
    this.dataParts = [];
    this.autoSendChecks = [];
    this.statusHistory = [];
    this.reloads = [];
    this.driverErrors = [];
    this.loop = false;
    this.timedOut = false;
    this.finished = false;
    this.pendingActions = 0;
    this.lastActivityAt = Date.now();

    this.chat = null; // made by #prepare()
    this.transport = null;
  }

  async #prepare() {
    const { spec } = this;
    if (this.live) {
      const cookie = headerValue(spec.headers, 'cookie');
      this.WebSocketClass = recordingWebSocketClass(
        { ...spec.handshakeHeaders, ...(cookie === undefined ? {} : { cookie }) },
        {
          onSocket: (info, socket) => {
            this.socketInfos.push(info);
            this.sockets.push(socket);
            this.#touch();
          },
          onFrame: (dir, frame) => {
            this.frames.push({ dir, frame });
            if (dir === 'out' && frame?.type === 'send') {
              this.requests.push(frame);
            }
            this.#touch();
          },
          onActivity: () => this.#touch(),
        },
      );
    }
    if (spec.transport === 'ws-js') {
      let loaded;
      try {
        loaded = await importModuleFromUrl(spec.transportJsUrl, spec.headers ?? {});
      } catch (err) {
        throw new Error(`cannot load the transport module: ${errorText(err)}`, { cause: err });
      }
      this.transportModule = loaded.record;
      this.TransportClass = loaded.module.AdkLiveTransport;
      if (typeof this.TransportClass !== 'function') {
        throw new Error(
          `${spec.transportJsUrl} does not export class AdkLiveTransport ` +
            `(exports: ${Object.keys(loaded.module).join(', ') || 'none'})`,
        );
      }
    }
    this.chat = this.#makeChat(this.spec.messages); // a page rendered with its history
  }

  #touch() {
    this.lastActivityAt = Date.now();
  }

  #track(promise, what) {
    this.pendingActions++;
    return Promise.resolve(promise)
      .catch(err => {
        this.driverErrors.push(`${what}: ${errorText(err)}`);
      })
      .finally(() => {
        this.pendingActions--;
        this.#touch();
      });
  }

  // ---- transport / fetch recording -------------------------------------------------------

  fetch = async (input, init = {}) => {
    const url = typeof input === 'string' ? input : (input?.url ?? String(input));
    const method = init.method ?? 'GET';
    if (this.requests.length >= this.spec.maxRequests) {
      throw this.#refuse();
    }
    let body = null;
    if (typeof init.body === 'string') {
      try {
        body = JSON.parse(init.body);
      } catch {
        body = init.body;
      }
    }
    this.requests.push(body);
    const index = this.requests.length - 1;
    const record = { method, url, status: null };
    this.responses.push(record);
    this.sent.push({
      url,
      method,
      headers: Object.fromEntries(new Headers(init.headers ?? {}).entries()),
      body: init.body ?? null,
    });
    this.#touch();

    let response;
    try {
      response = await globalThis.fetch(input, init);
    } catch (err) {
      record.fetchError = errorText(err);
      this.#touch();
      throw err;
    }
    record.status = response.status;
    record.contentType = response.headers.get('content-type');
    this.#touch();
    const init2 = {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    };
    if (!response.ok) {
      record.body = await response.text();
      return new Response(record.body, init2);
    }
    if (response.body == null) {
      return response;
    }
    // Keep a copy of the SSE text (what arrived so far, if the driver stops early).
    const [forChat, forRecord] = response.body.tee();
    record.sse = '';
    record.ended = false;
    const decoder = new TextDecoder();
    void (async () => {
      try {
        for await (const bytes of forRecord) {
          record.sse += decoder.decode(bytes, { stream: true });
        }
        record.sse += decoder.decode();
      } catch (err) {
        record.sseError = errorText(err);
      }
      record.ended = true;
    })();
    if (this.spec.duplicateRequests.includes(index)) {
      // A double submission: the very same request again, while this one streams.
      void this.#track(this.#duplicate(index, record), `duplicate of request ${index}`);
    }
    return new Response(forChat, init2);
  };

  /** POST a request exactly as it was sent (same URL, headers, body), outside the chat. */
  async #replay(index) {
    const { url, method, headers, body } = this.sent[index];
    const response = await globalThis.fetch(url, { method, headers, body });
    const text = await response.text();
    let json = null;
    try {
      json = JSON.parse(text);
    } catch {
      // an SSE body
    }
    return {
      request: index,
      status: response.status,
      contentType: response.headers.get('content-type'),
      body: text,
      json,
    };
  }

  async #duplicate(index, original) {
    const entry = { request: index, sentWhileOriginalStreamed: !original.ended };
    this.duplicates.push(entry);
    const sentAt = Date.now();
    Object.assign(entry, await this.#replay(index));
    entry.waitedMs = Date.now() - sentAt;
  }

  // ---- chat ------------------------------------------------------------------------------

  #sendAutomaticallyWhen() {
    const {
      lastAssistantMessageIsCompleteWithApprovalResponses: approvals,
      lastAssistantMessageIsCompleteWithToolCalls: toolCalls,
    } = this.ai;
    const predicate = {
      // ai@5 has no approvals: its "or" is the tool-call helper alone
      or: this.v5 ? toolCalls : options => toolCalls(options) || approvals(options),
      approvals,
      toolCalls,
      none: undefined,
    }[this.spec.sendAutomaticallyWhen];
    if (predicate == null) {
      return undefined;
    }
    return options => {
      const result = predicate(options);
      this.autoSendChecks.push(result);
      this.#touch();
      return result;
    };
  }

  #makeTransport() {
    const { spec } = this;
    if (!this.live) {
      const transportOptions = { api: spec.api, fetch: this.fetch };
      for (const key of ['headers', 'body', 'credentials']) {
        if (spec[key] !== undefined) {
          transportOptions[key] = spec[key];
        }
      }
      if (spec.prepareSendMessagesRequest !== undefined) {
        transportOptions.prepareSendMessagesRequest = lastMessageOnly(
          spec.prepareSendMessagesRequest,
        );
      }
      return new this.ai.DefaultChatTransport(transportOptions);
    }
    const options = {
      ...(spec.body === undefined ? {} : { body: spec.body }),
      ...(this.v5 ? { sdk: 5 } : {}), // transport.js's own option: the chunks ai@5 parses
      ...spec.wsTransportOptions,
      url: spec.wsUrl,
      webSocket: this.WebSocketClass,
    };
    if (spec.wsParams !== undefined) {
      options.params = spec.wsParams;
    }
    const transport =
      spec.transport === 'ws'
        ? new this.ai.WebSocketChatTransport(options)
        : new this.TransportClass(options);
    // The loop guard: refuse sends beyond maxRequests, as `fetch` does for SSE.
    const sendMessages = transport.sendMessages.bind(transport);
    transport.sendMessages = async options => {
      if (this.sendCalls >= this.spec.maxRequests) {
        throw this.#refuse();
      }
      this.sendCalls++;
      this.#touch();
      return sendMessages(options);
    };
    return transport;
  }

  #refuse() {
    // An AbortError makes AbstractChat settle in 'ready' without another automatic resend, so
    // the loop stops here.
    this.loop = true;
    this.finished = true;
    const err = new Error(`chat-driver: more than maxRequests=${this.spec.maxRequests} requests`);
    err.name = 'AbortError';
    return err;
  }

  /** Ends a chat and its transport (a page unload): stop, then dispose / close the transport. */
  async #closeChat(chat, transport) {
    const settle = (promise, ms) =>
      Promise.race([Promise.resolve(promise).catch(() => {}), new Promise(r => setTimeout(r, ms))]);
    try {
      if (typeof chat.dispose === 'function') {
        await settle(chat.dispose(), 500); // v7: stop() + transport.close()
      } else {
        await settle(chat.stop(), 200);
        transport.close?.();
      }
    } catch (err) {
      this.driverErrors.push(`closing the transport: ${errorText(err)}`);
    }
  }

  #makeChat(messages) {
    const transport = this.#makeTransport();
    this.transport = transport;
    const { spec } = this;
    const chatInit = {
      transport,
      messages,
      sendAutomaticallyWhen: this.#sendAutomaticallyWhen(),
      onToolCall: ({ toolCall }) => this.#onToolCall(chat, toolCall),
      onData: dataPart => {
        this.dataParts.push(JSON.parse(JSON.stringify(dataPart)));
        this.#touch();
      },
      onFinish: ({ isAbort, isDisconnect, isError, finishReason }) => {
        this.finishes.push({
          isAbort,
          isDisconnect,
          isError,
          finishReason: finishReason ?? null,
        });
        this.#touch();
      },
    };
    if (spec.chatId !== undefined) {
      chatInit.id = spec.chatId;
    }
    const chat = new this.NodeChat(chatInit);
    chat['~registerStatusCallback'](() => {
      this.statusHistory.push(chat.status);
      this.#touch();
    });
    return chat;
  }

  #onToolCall(chat, toolCall) {
    const { toolName, toolCallId, input } = toolCall;
    const entry = {
      toolName,
      toolCallId,
      input: input ?? null,
      atRequest: this.requests.length - 1,
      handled: false,
    };
    this.toolCalls.push(entry);
    this.#touch();
    let answer = this.clientToolAnswers.get(toolName);
    if (Array.isArray(answer)) {
      answer = answer.shift();
    }
    if (!isObject(answer)) {
      return;
    }
    entry.handled = true;
    const call =
      'errorText' in answer
        ? { state: 'output-error', tool: toolName, toolCallId, errorText: answer.errorText }
        : { tool: toolName, toolCallId, output: answer.output ?? null };
    // Do NOT await: onToolCall runs inside a job of the chat's serial job queue and
    // addToolOutput enqueues another job on it (awaiting deadlocks; doc section 4.2).
    void this.#track(this.#addToolOutput(chat, call), `addToolOutput(${toolName})`);
  }

  /** A browser tool's result: ai@5's `addToolResult` (its name before v6), else `addToolOutput`. */
  #addToolOutput(chat, call) {
    return this.v5 ? chat.addToolResult(call) : chat.addToolOutput(call);
  }

  // ---- idleness / implicit approvals ------------------------------------------------------

  #waitQuiet() {
    return new Promise(resolve => {
      const tick = () => {
        if (this.finished) {
          resolve();
          return;
        }
        const { status } = this.chat;
        const quiet = Date.now() - this.lastActivityAt >= this.spec.idleMs;
        if ((status === 'ready' || status === 'error') && quiet && this.pendingActions === 0) {
          resolve();
          return;
        }
        setTimeout(tick, 10);
      };
      tick();
    });
  }

  async #answerPendingApprovals() {
    const chat = this.chat;
    if (chat.status !== 'ready') {
      return false;
    }
    const last = chat.messages.at(-1);
    if (last?.role !== 'assistant') {
      return false;
    }
    const pending = last.parts.filter(
      part => this.ai.isToolUIPart(part) && part.state === 'approval-requested',
    );
    let answered = false;
    for (const part of pending) {
      const toolName = toolNameOf(part);
      const decision = this.approvalQueues.get(toolName)?.shift();
      if (decision === undefined) {
        continue;
      }
      this.approvalsGiven.push({
        toolName,
        toolCallId: part.toolCallId,
        approvalId: part.approval.id,
        ...decision,
        afterRequest: this.requests.length - 1,
      });
      answered = true;
      await this.#track(
        chat.addToolApprovalResponse({ id: part.approval.id, ...decision }),
        `addToolApprovalResponse(${toolName})`,
      );
    }
    return answered;
  }

  async waitIdle() {
    for (;;) {
      await this.#waitQuiet();
      if (this.finished) {
        return;
      }
      if (!(await this.#answerPendingApprovals())) {
        return;
      }
    }
  }

  // ---- steps -----------------------------------------------------------------------------

  #findToolPart(toolName, predicate = () => true) {
    const messages = this.chat.messages;
    for (let m = messages.length - 1; m >= 0; m--) {
      const parts = messages[m].parts;
      for (let p = parts.length - 1; p >= 0; p--) {
        const part = parts[p];
        if (this.ai.isToolUIPart(part) && toolNameOf(part) === toolName && predicate(part)) {
          return part;
        }
      }
    }
    return undefined;
  }

  // Poll a URL (with spec.headers) until its body contains `contains`: the observable end of
  // something the server does on its own (a timeout), instead of a guess at how long it takes.
  async #until({ url, contains, timeoutMs = 10000 }) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const response = await globalThis.fetch(url, { headers: this.spec.headers ?? {} });
      if ((await response.text()).includes(contains)) {
        return;
      }
      if (Date.now() > deadline) {
        const wanted = JSON.stringify(contains);
        throw new Error(`until: ${url} did not contain ${wanted} in ${timeoutMs} ms`);
      }
      await new Promise(resolve => setTimeout(resolve, 20));
    }
  }

  async #reload(arg) {
    const { url, resume = false } = typeof arg === 'string' ? { url: arg } : arg;
    const record = { url, status: null, messageCount: null };
    this.reloads.push(record);
    let messages;
    try {
      const response = await globalThis.fetch(url, { headers: this.spec.headers ?? {} });
      record.status = response.status;
      const text = await response.text();
      if (!response.ok) {
        record.body = text;
        return;
      }
      const json = JSON.parse(text);
      messages = Array.isArray(json) ? json : json?.messages;
      if (!Array.isArray(messages)) {
        record.error = 'the response is neither a list of messages nor {"messages": [...]}';
        record.body = text;
        return;
      }
    } catch (err) {
      record.error = errorText(err);
      return;
    }
    record.messageCount = messages.length;
    // A page reload: a brand-new chat object, hydrated with the server's messages (and, in the
    // live modes, a new connection: the old page's socket closes).
    if (this.live) {
      await this.#closeChat(this.chat, this.transport);
    }
    this.chat = this.#makeChat(messages);
    if (resume) {
      await this.chat.resumeStream();
    }
  }

  /** `{"stop": true}`: once the chat streams text, `chat.stop()` (the user's Stop button).
   *  `{"stop": "unload"}` (live only): once the chat streams text, the page unloads instead —
   *  its socket closes as a browser closes it then (1001, going away), with no `abort` frame
   *  and no `chat.stop()`; the step ends once the socket is closed and the chat has seen it
   *  (statusAfter "error"). A reload step then opens the next page. */
  async #stop(arg) {
    if (arg !== true && arg !== 'now' && arg !== 'unload') {
      throw new UsageError(`unknown stop ${JSON.stringify(arg)} (true, "now" or "unload")`);
    }
    if (arg === 'unload' && !this.live) {
      throw new UsageError('stop "unload" closes the live socket; it needs transport ws|ws-js');
    }
    const streamedText = () => {
      const last = this.chat.messages.at(-1);
      if (last?.role !== 'assistant') {
        return '';
      }
      return last.parts
        .filter(part => part.type === 'text')
        .map(part => part.text)
        .join('');
    };
    if (arg === true || arg === 'unload') {
      while (!this.finished && !(this.chat.status === 'streaming' && streamedText() !== '')) {
        await new Promise(resolve => setTimeout(resolve, 5));
      }
    }
    const entry = { status: this.chat.status, textBefore: streamedText() };
    this.stops.push(entry);
    if (arg === 'unload') {
      await this.#unload();
    } else {
      await this.chat.stop();
    }
    entry.textAfter = streamedText();
    entry.statusAfter = this.chat.status;
  }

  /** The page unloads: the browser closes the chat's open socket (1001), nothing else. */
  async #unload() {
    const socket = this.sockets.findLast(s => s.readyState === s.OPEN);
    if (socket === undefined) {
      throw new UsageError('stop "unload": no open socket to close');
    }
    socket.close(1001, 'page unload');
    const busy = () => this.chat.status === 'submitted' || this.chat.status === 'streaming';
    while (!this.finished && (socket.readyState !== socket.CLOSED || busy())) {
      await new Promise(resolve => setTimeout(resolve, 5));
    }
  }

  async #runStep(step) {
    const kind = stepKind(step);
    const arg = step[kind];
    const chat = this.chat;
    switch (kind) {
      case 'send': {
        if (arg == null) {
          return chat.sendMessage();
        }
        if (typeof arg === 'string') {
          return chat.sendMessage({ text: arg });
        }
        const { body, headers, ...message } = arg;
        const options = {};
        if (body !== undefined) {
          options.body = body;
        }
        if (headers !== undefined) {
          options.headers = headers;
        }
        return chat.sendMessage(Object.keys(message).length > 0 ? message : undefined, options);
      }
      case 'wait':
        if (arg !== 'idle') {
          throw new UsageError(`unknown wait ${JSON.stringify(arg)} (only "idle")`);
        }
        return undefined;
      case 'sleep':
        return new Promise(resolve => setTimeout(resolve, Number(arg)));
      case 'until':
        return this.#until(arg);
      case 'addToolOutput': {
        const { tool, toolCallId, output, errorText: error } = arg;
        let id = toolCallId;
        if (id == null || id === '$last') {
          id = this.#findToolPart(tool)?.toolCallId;
          if (id == null) {
            throw new UsageError(`addToolOutput: no part of tool ${tool} in the messages`);
          }
        }
        return this.#addToolOutput(
          chat,
          error !== undefined
            ? { state: 'output-error', tool, toolCallId: id, errorText: error }
            : { tool, toolCallId: id, output: output ?? null },
        );
      }
      case 'approve': {
        const { tool, approvalId, approved, reason } = arg;
        let id = approvalId;
        if (id == null) {
          id = this.#findToolPart(tool, part => part.state === 'approval-requested')?.approval
            ?.id;
          if (id == null) {
            throw new UsageError(`approve: no approval-requested part of tool ${tool}`);
          }
        }
        const clicks = arg.clicks ?? 1;
        const answers = [];
        for (let click = 0; click < clicks; click++) {
          // clicks > 1: a double click, the same answer again before the first one settled
          this.approvalsGiven.push({
            toolName: tool ?? null,
            approvalId: id,
            approved,
            ...(reason === undefined ? {} : { reason }),
            afterRequest: this.requests.length - 1,
            explicit: true,
          });
          answers.push(chat.addToolApprovalResponse({ id, approved, reason }));
        }
        return Promise.all(answers);
      }
      case 'regenerate':
        return chat.regenerate(isObject(arg) ? arg : {});
      case 'resume':
        return chat.resumeStream();
      case 'reload':
        return this.#reload(arg);
      case 'stop':
        return this.#stop(arg);
      case 'leave':
        // The page goes away: the chat stops and (live) its socket closes.
        await this.#closeChat(chat, this.transport);
        return undefined;
      case 'resend': {
        if (this.live) {
          throw new UsageError('resend replays an SSE request; it needs transport "sse"');
        }
        const index = arg === 'last' ? this.sent.length - 1 : arg?.request;
        if (!Number.isInteger(index) || this.sent[index] === undefined) {
          throw new UsageError(`resend: no request ${JSON.stringify(arg)} was sent`);
        }
        this.resends.push(await this.#replay(index));
        return undefined;
      }
      default:
        throw new UsageError(`unknown step ${kind}`);
    }
  }

  async #runSteps() {
    for (const step of this.spec.steps) {
      if (this.finished) {
        return;
      }
      this.#touch();
      const done = this.#track(this.#runStep(step), `step ${JSON.stringify(step)}`);
      if (step.background === true) {
        continue; // not awaited, no idle wait: the next step runs while this one is under way
      }
      await done;
      await this.waitIdle();
    }
  }

  async run() {
    await this.#prepare();
    let timer;
    const timeout = new Promise(resolve => {
      timer = setTimeout(() => {
        this.timedOut = true;
        this.finished = true;
        resolve();
      }, this.spec.timeoutMs);
    });
    try {
      await Promise.race([this.#runSteps(), timeout]);
    } finally {
      clearTimeout(timer);
      this.finished = true;
    }
    if (this.timedOut) {
      try {
        await Promise.race([this.chat.stop(), new Promise(r => setTimeout(r, 100))]);
      } catch {
        // best effort
      }
    }
    if (this.live) {
      await this.#closeChat(this.chat, this.transport);
      await waitSocketsClosed(this.sockets, CLOSE_WAIT_MS);
    }
    return this.result();
  }

  result() {
    const chat = this.chat;
    return {
      sdk: this.loaded.sdk,
      status: chat.status,
      error: chat.error?.message ?? null,
      errorName: chat.error?.name ?? null,
      messages: chat.messages,
      requests: this.requests,
      responses: this.responses,
      toolCalls: this.toolCalls,
      approvals: this.approvalsGiven,
      finishes: this.finishes,
      dataParts: this.dataParts,
      autoSendChecks: this.autoSendChecks,
      statusHistory: this.statusHistory,
      reloads: this.reloads,
      resends: this.resends,
      duplicates: this.duplicates,
      stops: this.stops,
      loop: this.loop,
      timeout: this.timedOut,
      driverError: this.driverErrors.length === 0 ? null : this.driverErrors.join('; '),
      versions: this.loaded.info,
      transport: this.spec.transport,
      ...(this.live
        ? { frames: this.frames, sockets: this.socketInfos, transportModule: this.transportModule }
        : {}),
    };
  }
}

// The transport's prepareSendMessagesRequest, as app developers write it to send only the last
// message (spec.prepareSendMessagesRequest):
//   "guide":   the AI SDK persistence guide's snippet, verbatim: {message, id} (trigger,
//              messageId and body extras are dropped)
//   "trigger": {...body, id, message, trigger, messageId}: the extras and the request's kind kept
//   "regenerate-by-id": as "trigger", but a regenerate sends no message: {...body, id, trigger,
//              messageId} (the server holds the chat)
const LAST_MESSAGE_ONLY = ['guide', 'trigger', 'regenerate-by-id'];

function lastMessageOnly(kind) {
  switch (kind) {
    case 'guide':
      return ({ messages, id }) => {
        return { body: { message: messages[messages.length - 1], id } };
      };
    case 'trigger':
      return ({ messages, id, body, trigger, messageId }) => ({
        body: { ...body, id, message: messages[messages.length - 1], trigger, messageId },
      });
    case 'regenerate-by-id':
      return ({ messages, id, body, trigger, messageId }) =>
        trigger === 'regenerate-message'
          ? { body: { ...body, id, trigger, messageId } }
          : { body: { ...body, id, message: messages[messages.length - 1], trigger, messageId } };
    default:
      throw new Error(`unknown prepareSendMessagesRequest ${JSON.stringify(kind)}`);
  }
}

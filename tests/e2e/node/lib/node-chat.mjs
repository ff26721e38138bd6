// A Node `Chat`: the SDK's own AbstractChat with a ChatState copied from @ai-sdk/react's
// ReactChatState (chat.react.ts in @ai-sdk/react 3.0.327 for ai@6 and 4.0.177 for ai@7; the two
// differ only by v7's experimental_queuedMessages, which is harmless on v6). Semantics kept:
// immutable array updates, `replaceMessage` stores a snapshot, `snapshot` copies each part
// shallowly and clones plain-object/array metadata. Throttling and useSyncExternalStore are not
// reproduced; the change callbacks fire synchronously.

function cloneMetadata(metadata) {
  if (Array.isArray(metadata)) {
    return [...metadata];
  }
  if (
    metadata != null &&
    typeof metadata === 'object' &&
    (Object.getPrototypeOf(metadata) === Object.prototype ||
      Object.getPrototypeOf(metadata) === null)
  ) {
    return { ...metadata };
  }
  return metadata;
}

export class NodeChatState {
  #messages;
  #status = 'ready';
  #error = undefined;
  #queuedMessages = [];

  #messagesCallbacks = new Set();
  #statusCallbacks = new Set();
  #errorCallbacks = new Set();
  #queuedMessagesCallbacks = new Set();

  constructor(initialMessages = []) {
    this.#messages = initialMessages;
  }

  get status() {
    return this.#status;
  }

  set status(newStatus) {
    this.#status = newStatus;
    this.#callStatusCallbacks();
  }

  get error() {
    return this.#error;
  }

  set error(newError) {
    this.#error = newError;
    this.#callErrorCallbacks();
  }

  get messages() {
    return this.#messages;
  }

  set messages(newMessages) {
    this.#messages = [...newMessages];
    this.#callMessagesCallbacks();
  }

  get experimental_queuedMessages() {
    return this.#queuedMessages;
  }

  set experimental_queuedMessages(newQueuedMessages) {
    this.#queuedMessages = newQueuedMessages;
    this.#queuedMessagesCallbacks.forEach(callback => callback());
  }

  pushMessage = message => {
    this.#messages = this.#messages.concat(message);
    this.#callMessagesCallbacks();
  };

  popMessage = () => {
    this.#messages = this.#messages.slice(0, -1);
    this.#callMessagesCallbacks();
  };

  replaceMessage = (index, message) => {
    this.#messages = [
      ...this.#messages.slice(0, index),
      this.snapshot(message),
      ...this.#messages.slice(index + 1),
    ];
    this.#callMessagesCallbacks();
  };

  snapshot = value => {
    if (
      value == null ||
      typeof value !== 'object' ||
      !('parts' in value) ||
      !Array.isArray(value.parts)
    ) {
      return value;
    }
    const snapshot = { ...value, parts: value.parts.map(part => ({ ...part })) };
    if ('metadata' in value) {
      snapshot.metadata = cloneMetadata(value.metadata);
    }
    return snapshot;
  };

  '~registerMessagesCallback' = onChange => {
    this.#messagesCallbacks.add(onChange);
    return () => {
      this.#messagesCallbacks.delete(onChange);
    };
  };

  '~registerStatusCallback' = onChange => {
    this.#statusCallbacks.add(onChange);
    return () => {
      this.#statusCallbacks.delete(onChange);
    };
  };

  '~registerErrorCallback' = onChange => {
    this.#errorCallbacks.add(onChange);
    return () => {
      this.#errorCallbacks.delete(onChange);
    };
  };

  '~registerQueuedMessagesCallback' = onChange => {
    this.#queuedMessagesCallbacks.add(onChange);
    return () => {
      this.#queuedMessagesCallbacks.delete(onChange);
    };
  };

  #callMessagesCallbacks = () => {
    this.#messagesCallbacks.forEach(callback => callback());
  };

  #callStatusCallbacks = () => {
    this.#statusCallbacks.forEach(callback => callback());
  };

  #callErrorCallbacks = () => {
    this.#errorCallbacks.forEach(callback => callback());
  };
}

const chatClasses = new WeakMap();

/**
 * Returns a `NodeChat` class (like @ai-sdk/react's `Chat`) for the given SDK's AbstractChat.
 * Usage: `const NodeChat = nodeChatClass(ai.AbstractChat); new NodeChat({id, transport, ...})`.
 */
export function nodeChatClass(AbstractChat) {
  let cls = chatClasses.get(AbstractChat);
  if (cls == null) {
    cls = class NodeChat extends AbstractChat {
      #state;

      constructor({ messages, ...init }) {
        const state = new NodeChatState(messages);
        super({ ...init, state });
        this.#state = state;
      }

      '~registerMessagesCallback' = onChange => this.#state['~registerMessagesCallback'](onChange);

      '~registerStatusCallback' = onChange => this.#state['~registerStatusCallback'](onChange);

      '~registerErrorCallback' = onChange => this.#state['~registerErrorCallback'](onChange);

      '~registerQueuedMessagesCallback' = onChange =>
        this.#state['~registerQueuedMessagesCallback'](onChange);
    };
    chatClasses.set(AbstractChat, cls);
  }
  return cls;
}

// Validates one SSE response body the way the real client does.
//
// 1. Parsing + schema: `parseJsonEventStream({stream, schema: uiMessageChunkSchema})` from the
//    provider-utils copy the given `ai` version imports, followed by the same "throw on the first
//    failed chunk" transform as `DefaultChatTransport.processResponseStream` (identical in v6 and
//    v7). Chunks after the first invalid one are never processed, as in the client.
// 2. Processing: the SDK's own `readUIMessageStream` (the same `processUIMessageStream` state
//    machine `AbstractChat` uses), which throws `UIMessageStreamError` on sequencing errors.
//    Note: unlike `AbstractChat` it resets its state when `start.messageId` changes.
// 3. One check the client does NOT report but silently suffers from: an unterminated final event
//    (no trailing blank line) is dropped by the SSE parser. We detect it by re-parsing the body
//    with a blank line appended and comparing the event counts.
//
// `error` chunks are protocol-valid: they are listed in `errorChunks` and do not make `ok` false.

const encoder = new TextEncoder();

function bodyStream(body) {
  const bytes = typeof body === 'string' ? encoder.encode(body) : body;
  return new ReadableStream({
    start(controller) {
      if (bytes.length > 0) {
        controller.enqueue(bytes);
      }
      controller.close();
    },
  });
}

function describe(err) {
  if (!(err instanceof Error)) {
    return String(err);
  }
  return `${err.name}: ${err.message}`;
}

async function countEvents(loaded, bytes) {
  const { providerUtils, ai } = loaded;
  const results = [];
  const reader = providerUtils
    .parseJsonEventStream({ stream: bodyStream(bytes), schema: ai.uiMessageChunkSchema })
    .getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) {
      return results;
    }
    results.push(value);
  }
}

function concatBytes(a, b) {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

/**
 * @param {{ai: any, providerUtils: any}} loaded result of loadSdk()
 * @param {string | Uint8Array} body the raw response body
 * @param {object | undefined} message the assistant message a continuation appends to (the last
 *   message of its request), so results for earlier tool calls find their parts
 */
export async function validateBody(loaded, body, message = undefined) {
  const { ai, providerUtils } = loaded;
  const bytes = typeof body === 'string' ? encoder.encode(body) : body;
  const chunks = [];
  const errors = [];
  const errorChunks = [];
  let validationError;

  // Same as DefaultChatTransport.processResponseStream, plus recording of the parsed chunks.
  const chunkStream = providerUtils
    .parseJsonEventStream({ stream: bodyStream(bytes), schema: ai.uiMessageChunkSchema })
    .pipeThrough(
      new TransformStream({
        async transform(result, controller) {
          if (!result.success) {
            validationError = result.error;
            throw result.error;
          }
          chunks.push(result.value);
          if (result.value.type === 'error') {
            errorChunks.push(result.value.errorText);
          }
          controller.enqueue(result.value);
        },
      }),
    );

  // processUIMessageStream reports an `error` chunk as onError(new Error(errorText)); every other
  // onError is a real failure (validation error, UIMessageStreamError, ...).
  let pendingErrorChunks = 0;
  const countingStream = chunkStream.pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        if (chunk.type === 'error') {
          pendingErrorChunks++;
        }
        controller.enqueue(chunk);
      },
    }),
  );

  let finalMessage = null;
  // The tool parts of each snapshot that changed them: what the page renders while a call's
  // input streams (state "input-streaming", input parsed as partial JSON), and after.
  const toolStates = [];
  let lastTools = null;
  const onError = err => {
    if (
      pendingErrorChunks > 0 &&
      err instanceof Error &&
      err.constructor === Error &&
      errorChunks.includes(err.message)
    ) {
      pendingErrorChunks--;
      return;
    }
    errors.push(err);
  };
  try {
    const start = message == null ? {} : { message: structuredClone(message) };
    for await (const snapshot of ai.readUIMessageStream({ stream: countingStream, onError, ...start })) {
      finalMessage = snapshot;
      const tools = snapshot.parts
        .filter(p => 'toolCallId' in p)
        .map(p => ({ toolCallId: p.toolCallId, state: p.state, input: p.input }));
      const json = JSON.stringify(tools);
      if (tools.length > 0 && json !== lastTools) {
        toolStates.push(JSON.parse(json));
        lastTools = json;
      }
    }
  } catch (err) {
    errors.push(err);
  }
  if (validationError != null && !errors.includes(validationError)) {
    errors.unshift(validationError);
  }

  // The unterminated-final-event check (only meaningful if everything before it was accepted).
  if (errors.length === 0) {
    const asIs = await countEvents(loaded, bytes);
    const terminated = await countEvents(loaded, concatBytes(bytes, encoder.encode('\n\n')));
    if (terminated.length > asIs.length) {
      const lost = terminated.slice(asIs.length).map(r => r.rawValue ?? null);
      errors.push(
        new Error(
          'unterminated final SSE event (no trailing blank line): the client silently drops ' +
            `it: ${JSON.stringify(lost)}`,
        ),
      );
    }
  }

  return {
    ok: errors.length === 0,
    chunks,
    error: errors.length === 0 ? null : errors.map(describe).join('; '),
    errorChunks,
    message: finalMessage,
    toolStates,
  };
}

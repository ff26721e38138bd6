#!/usr/bin/env node
// The AI SDK's own server (streamText + toUIMessageStreamResponse, mock model, the demo agent's
// four tools; see lib/reference.mjs) answering chat requests, for conformance tests.
//
// stdin:  [{"name": str, "messages": [UIMessage, ...]}, ...]   (one POST /chat body's messages)
// argv:   --sdk 6|7 [--serve]
//   --serve: read one such array per line until stdin ends, and write one line each:
//   {"results": [...]} (the stdout below) or {"usageError": "Name: message"}.
// stdout: [{"name", "status", "headers", "thrown", "sse", "ok", "chunks", "error",
//           "errorChunks", "message"}, ...]
//   status  the Response's HTTP status (null if the route handler threw)
//   headers the Response's headers, names in lower case
//   thrown  "Name: message" if the route handler threw before it had a Response, else null
//   sse     the response body as sent
//   ok, chunks, error, errorChunks, message
//           the body read back by the SDK's own client code, exactly as validate-sse.mjs
//           reports it (a continuation, i.e. a request whose last message is the assistant's,
//           is read on top of that message, as AbstractChat does)
// Exit code 0 when JSON was printed, 2 on usage errors.

import {
  errorText,
  parseSdkArg,
  printJsonAndExit,
  readStdinJson,
  runMain,
  serveLines,
  UsageError,
} from './lib/cli.mjs';
import { referenceChat } from './lib/reference.mjs';
import { loadSdk } from './lib/sdk.mjs';
import { validateBody } from './lib/validate.mjs';

const EMPTY = {
  sse: '',
  ok: false,
  chunks: [],
  error: null,
  errorChunks: [],
  message: null,
};

runMain(async () => {
  const loaded = await loadSdk(parseSdkArg());
  if (process.argv.includes('--serve')) {
    // One JSON array per line in, one line out, as validate-sse.mjs --serve: the test process
    // keeps this process instead of starting Node (and loading the SDK) for every request.
    // Each request is answered on its own (a new mock model, ids of its own), as a run would.
    await serveLines(async input => ({ results: await answerAll(loaded, input) }));
    return;
  }
  printJsonAndExit(await answerAll(loaded, await readStdinJson()));
});

async function answerAll(loaded, input) {
  if (!Array.isArray(input)) {
    throw new UsageError('stdin must be a JSON array of {name, messages}');
  }
  const results = [];
  for (const [index, item] of input.entries()) {
    const name = item?.name ?? String(index);
    if (!Array.isArray(item?.messages) || item.messages.length === 0) {
      throw new UsageError(`item ${index} (${name}) has no "messages" array`);
    }
    let response;
    try {
      response = await referenceChat(loaded, structuredClone(item.messages));
    } catch (err) {
      results.push({ name, status: null, headers: {}, thrown: errorText(err), ...EMPTY });
      continue;
    }
    const sse = await response.text();
    const last = item.messages.at(-1);
    const continued = last.role === 'assistant' ? last : undefined;
    results.push({
      name,
      status: response.status,
      headers: Object.fromEntries(response.headers),
      thrown: null,
      sse,
      ...(await validateBody(loaded, sse, continued)),
    });
  }
  return results;
}

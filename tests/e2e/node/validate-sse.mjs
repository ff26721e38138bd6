#!/usr/bin/env node
// Validates SSE response bodies with the real AI SDK client code.
//
// stdin:  [{"name": str, "body": str} | {"name": str, "bodyBase64": str}, ...]
// argv:   --sdk 5|6|7 [--serve]
//   --serve: read one such array per line until stdin ends, and write one line each:
//   {"results": [...]} (the stdout below) or {"usageError": "Name: message"}.
// stdout: [{"name", "ok", "chunks", "error", "errorChunks", "message"}, ...]
//   ok          false if a chunk fails parsing/validation (uiMessageChunkSchema), if the SDK's
//               stream processing throws (e.g. UIMessageStreamError), or if the final event is
//               not terminated by a blank line (the client would silently drop it).
//   chunks      the chunks as parsed by the SDK, up to (excluding) the first invalid one
//   error       "Name: message" of each problem, joined with "; ", or null
//   errorChunks errorText of each (valid) `error` chunk; these do not make ok false
//   message     the last UIMessage snapshot built by readUIMessageStream, or null
//   toolStates  the tool parts ({toolCallId, state, input}) of each snapshot that changed
//               them, in order (what the page renders as a call's input streams)
// Exit code 0 when JSON was printed, 2 on usage errors.

import {
  parseSdkArg,
  printJsonAndExit,
  readStdinJson,
  runMain,
  serveLines,
  UsageError,
} from './lib/cli.mjs';
import { loadSdk } from './lib/sdk.mjs';
import { validateBody } from './lib/validate.mjs';

runMain(async () => {
  const sdk = parseSdkArg();
  const loaded = await loadSdk(sdk);
  if (process.argv.includes('--serve')) {
    // One JSON array per line in, one line out: {"results": [...]} or {"usageError": text}.
    // The test process keeps one such process per SDK, instead of starting Node (and loading
    // the SDK) for every body it checks; each line is checked on its own, as a run would be.
    await serveLines(async items => ({ results: await validateAll(loaded, items) }));
    return;
  }
  printJsonAndExit(await validateAll(loaded, await readStdinJson()));
});

async function validateAll(loaded, input) {
  if (!Array.isArray(input)) {
    throw new UsageError('stdin must be a JSON array of {name, body | bodyBase64}');
  }
  const results = [];
  for (const [index, item] of input.entries()) {
    const name = item?.name ?? String(index);
    let body;
    if (typeof item?.body === 'string') {
      body = item.body;
    } else if (typeof item?.bodyBase64 === 'string') {
      body = new Uint8Array(Buffer.from(item.bodyBase64, 'base64'));
    } else {
      throw new UsageError(`item ${index} (${name}) has neither "body" nor "bodyBase64"`);
    }
    results.push({ name, ...(await validateBody(loaded, body, item.message ?? undefined)) });
  }
  return results;
}

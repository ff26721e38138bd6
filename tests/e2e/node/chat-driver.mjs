#!/usr/bin/env node
// Drives the real AI SDK chat client (AbstractChat + the stock DefaultChatTransport, or a
// WebSocket transport in live mode) against a live server.
//
// argv:  --sdk 5|6|7   (5: ai@5, which has no approvals: spec.approvals and approve steps are
//        refused, "or" is the tool-call helper alone, browser results go through addToolResult;
//        ws-js constructs the transport with {sdk: 5})
// stdin: one JSON spec:
// {
//   "transport": "sse" | "ws" | "ws-js",                 default "sse"
//       sse:   the stock DefaultChatTransport (POST spec.api, SSE responses)
//       ws:    (sdk 7 only) the stock WebSocketChatTransport of ai@7
//       ws-js: the server's own transport: the ES module at spec.transportJsUrl is fetched (with
//              spec.headers), written to a temp file and imported; its export AdkLiveTransport
//              is constructed like the stock one. Works with sdk 5, 6 and 7.
//   "api": "http://127.0.0.1:PORT/agent/chat",          required for sse
//   "wsUrl": "ws://127.0.0.1:PORT/agent/live",          required for ws / ws-js (option url)
//   "wsParams": {"k": "v"},                              optional (option params: query params)
//   "transportJsUrl": "http://127.0.0.1:PORT/agent/transport.js"   required for ws-js
//   "handshakeHeaders": {...},  ws/ws-js: extra headers of the WebSocket opening handshake
//   "wsTransportOptions": {...},  ws/ws-js: extra (JSON) options for the transport constructor,
//       e.g. {"headers": {...}} (stock: sent inside each request frame) or {"protocols": [...]}
//   "chatId": "c1",                                      optional (chat id sent as body.id)
//   "messages": [UIMessage, ...],   optional: the chat starts with them (useChat({messages}), a
//       page rendered on the server with the chat's history)
//   "headers": {...}, "body": {...}, "credentials": "include"   DefaultChatTransport options.
//       ws/ws-js: headers.cookie (any case) is sent as the Cookie header of the opening
//       handshake (the `ws` constructor is wrapped, as a browser sends its cookies); the other
//       headers are only used for reload / transportJsUrl GETs; body is the transport's body
//       option (stock: merged into each send/resume frame's body); credentials is ignored.
//   "prepareSendMessagesRequest": "guide" | "trigger" | "regenerate-by-id"   sse only: send only
//       the last message (DefaultChatTransport's option): "guide" is the AI SDK persistence
//       guide's {message, id}; "trigger" adds ...body, trigger and messageId; "regenerate-by-id"
//       is "trigger" but a regenerate sends no message (lastMessageOnly in lib/driver.mjs)
//   "sendAutomaticallyWhen": "or" | "approvals" | "toolCalls" | "none"     default "or"
//       stock lastAssistantMessageIsCompleteWithApprovalResponses / ...WithToolCalls; or = both
//   "clientTools": {"change_bgm": {"output": ...} | {"errorText": "..."} | [answers, in order]},
//       answered in onToolCall with addToolOutput (sdk 5: addToolResult; not awaited); other
//       tools are only recorded
//   "approvals": {"process_payment": [true, false, {"approved": bool, "reason": str}, ...]},
//       whenever the chat is idle and ready and the last message is an assistant message with
//       parts in state approval-requested, each such part (in part order) gets the next decision
//       of its tool via addToolApprovalResponse; parts without a decision left are not answered
//   "steps": [                                           run in order; an idle wait after each
//     {"send": "text"} | {"send": null} (continue) | {"send": {"text"|"parts"|"files",
//         "metadata"?, "messageId"?, "body"?, "headers"?}},
//     {"wait": "idle"}, {"sleep": ms},
//     {"until": {"url", "contains", "timeoutMs"?}}   GET url until its body contains the text
//     {"addToolOutput": {"tool", "toolCallId"? (default/"$last": last part of that tool),
//         "output" | "errorText"}},
//     {"approve": {"tool" | "approvalId", "approved", "reason"?}},
//     {"regenerate": true | {"messageId"}}, {"resume": true},
//     {"reload": "http://.../messages" | {"url", "resume"?: bool}}
//         GET (with spec.headers) a list of UIMessages or {"messages": [...]}, then replace the
//         chat by a new one hydrated with them (a page reload); resume -> resumeStream()
//     {"stop": true | "now"}   chat.stop() (the Stop button): true waits until the chat streams
//         text (status "streaming" and text in the last assistant message) first; recorded in
//         "stops" as {status, textBefore, textAfter, statusAfter}
//     {"leave": true}          the page goes away: the chat is stopped / disposed and (live) its
//         socket closed; use a reload step for the next page
//     {"resend": "last" | {"request": i}}   sse only: POST request i (default the last) again
//         exactly as it was sent (URL, headers, body), outside the chat; recorded in "resends"
//         as {request, status, contentType, body, json}
//     {"approve": {..., "clicks": 2}}       a double click: the same answer twice, not awaited
//     any step + "background": true: started, not awaited, no idle wait (e.g. a send, then a
//         stop while it streams)
//   ],
//   "duplicateRequests": [i, ...],   sse only: when request i gets its response headers, the
//       same request is POSTed again (a double submission overlapping the stream); recorded in
//       "duplicates" as {request, sentWhileOriginalStreamed, status, contentType, body, json,
//       waitedMs (from sending it to its response)}
//   "maxRequests": 10,   more requests are refused (AbortError) and "loop" is reported
//                        (ws/ws-js: counts transport.sendMessages calls, i.e. send frames)
//   "idleMs": 300,       idle = status ready/error and no request/status change/callback for idleMs
//   "timeoutMs": 30000   then the partial result is printed with "timeout": true
// }
// stdout: {"status", "error", "errorName", "messages", "requests": [request bodies],
//   "responses": [{method, url, status, contentType, body (non-2xx text), sse (2xx text)}],
//   "toolCalls": [{toolName, toolCallId, input, atRequest (index into requests), handled}],
//   "approvals": [...decisions given], "finishes": [onFinish flags], "autoSendChecks": [bool],
//   "dataParts": [every data-* chunk onData got, transient ones included, in order],
//   "statusHistory", "reloads", "resends", "duplicates", "stops", "loop", "timeout",
//   "driverError", "versions", "transport"}
// ws/ws-js: "requests" holds one entry per "send" frame (the frame's JSON), "responses" is [],
//   and the report adds "frames": [{dir: "out"|"in", frame}] (every data frame, in order; text
//   parsed as JSON, or {text} if it is not JSON; binary as {binary: byteLength}),
//   "sockets": [{url, opened, closeCode, closeReason, error}] (one per connection), and
//   "transportModule": {url, status, contentType, bytes} (ws-js) or null.
//   At the end the chat is disposed / the transport closed, and the close handshakes awaited
//   (up to 1 s). A reload step closes the old chat's transport (a new page, a new socket).
// Exit code 0 whenever JSON was printed; 2 on usage errors (message on stderr).
//
// --serve: read one spec per line until stdin ends and write one line for each: {"report": ...}
//   (the stdout above) or {"usageError": "Name: message"} (what a run would have exited 2 for).
//   The test process keeps such processes (one run at a time each) instead of starting Node and
//   loading the SDK for every chat it drives. A run is as a run of its own would be: a new
//   ChatDriver; an error no one caught while it runs (which would have crashed its own process)
//   is that run's usage error; one that comes between runs (the late end of a closed socket,
//   after which a run of its own had exited) goes to stderr.

import {
  errorText,
  parseSdkArg,
  printJsonAndExit,
  readStdinJson,
  runMain,
  serveLines,
} from './lib/cli.mjs';
import { ChatDriver } from './lib/driver.mjs';
import { loadSdk } from './lib/sdk.mjs';

runMain(async () => {
  const sdk = parseSdkArg();
  const loaded = await loadSdk(sdk);
  if (process.argv.includes('--serve')) {
    await serve(loaded);
    return;
  }
  const spec = await readStdinJson();
  const driver = new ChatDriver(loaded, spec);
  printJsonAndExit(await driver.run());
});

async function serve(loaded) {
  let uncaught = null; // the current run's: reject it to end the run with that error
  const onUncaught = err => {
    if (uncaught === null) {
      process.stderr.write(`between runs: ${errorText(err)}\n`);
    } else {
      uncaught(err);
    }
  };
  process.on('unhandledRejection', onUncaught);
  process.on('uncaughtException', onUncaught);
  await serveLines(async spec => {
    try {
      const crashed = new Promise((_, reject) => {
        uncaught = reject;
      });
      return { report: await Promise.race([new ChatDriver(loaded, spec).run(), crashed]) };
    } finally {
      uncaught = null;
    }
  });
}

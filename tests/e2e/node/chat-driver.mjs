#!/usr/bin/env node
// Drives the real AI SDK chat client (AbstractChat + the stock DefaultChatTransport) against a
// live server.
//
// argv:  --sdk 6|7
// stdin: one JSON spec:
// {
//   "api": "http://127.0.0.1:PORT/agent/chat",          required
//   "chatId": "c1",                                      optional (chat id sent as body.id)
//   "headers": {...}, "body": {...}, "credentials": "include"   DefaultChatTransport options
//   "sendAutomaticallyWhen": "or" | "approvals" | "toolCalls" | "none"     default "or"
//       stock lastAssistantMessageIsCompleteWithApprovalResponses / ...WithToolCalls; or = both
//   "clientTools": {"change_bgm": {"output": ...} | {"errorText": "..."} | [answers, in order]},
//       answered in onToolCall with addToolOutput (not awaited); other tools are only recorded
//   "approvals": {"process_payment": [true, false, {"approved": bool, "reason": str}, ...]},
//       whenever the chat is idle and ready and the last message is an assistant message with
//       parts in state approval-requested, each such part (in part order) gets the next decision
//       of its tool via addToolApprovalResponse; parts without a decision left are not answered
//   "steps": [                                           run in order; an idle wait after each
//     {"send": "text"} | {"send": null} (continue) | {"send": {"text"|"parts"|"files",
//         "metadata"?, "messageId"?, "body"?, "headers"?}},
//     {"wait": "idle"}, {"sleep": ms},
//     {"addToolOutput": {"tool", "toolCallId"? (default/"$last": last part of that tool),
//         "output" | "errorText"}},
//     {"approve": {"tool" | "approvalId", "approved", "reason"?}},
//     {"regenerate": true | {"messageId"}}, {"resume": true},
//     {"reload": "http://.../messages" | {"url", "resume"?: bool}}
//         GET (with spec.headers) a list of UIMessages or {"messages": [...]}, then replace the
//         chat by a new one hydrated with them (a page reload); resume -> resumeStream()
//   ],
//   "maxRequests": 10,   more requests are refused (AbortError) and "loop" is reported
//   "idleMs": 300,       idle = status ready/error and no request/status change/callback for idleMs
//   "timeoutMs": 30000   then the partial result is printed with "timeout": true
// }
// stdout: {"status", "error", "errorName", "messages", "requests": [request bodies],
//   "responses": [{method, url, status, contentType, body (non-2xx text), sse (2xx text)}],
//   "toolCalls": [{toolName, toolCallId, input, atRequest (index into requests), handled}],
//   "approvals": [...decisions given], "finishes": [onFinish flags], "autoSendChecks": [bool],
//   "statusHistory", "reloads", "loop", "timeout", "driverError", "versions"}
// Exit code 0 whenever JSON was printed; 2 on usage errors (message on stderr).

import { parseSdkArg, printJsonAndExit, readStdinJson, runMain } from './lib/cli.mjs';
import { ChatDriver } from './lib/driver.mjs';
import { loadSdk } from './lib/sdk.mjs';

runMain(async () => {
  const sdk = parseSdkArg();
  const spec = await readStdinJson();
  const loaded = await loadSdk(sdk);
  const driver = new ChatDriver(loaded, spec);
  printJsonAndExit(await driver.run());
});

// The tools the page runs in the browser for the agent (declared on the server as client tools):
// the AI SDK's onToolCall hands each call here, and its output (or error) goes back to the chat
// with addToolOutput (not awaited: the chat sends it on by itself).
import { changeBgm } from "./bgm.js";
import { getLocation } from "./location.js";

/** Each tool: `(input, answer, fail)`, calling `answer(output)` or `fail(errorText)` once. */
const TOOLS = { change_bgm: changeBgm, get_location: getLocation };

/** Run the browser tool `toolName` of a tool call of `chat`; a tool the page lacks is left. */
export function runBrowserTool(chat, { toolName, toolCallId, input }) {
  const tool = TOOLS[toolName];
  if (!tool) return;
  const answer = (output) => chat.addToolOutput({ tool: toolName, toolCallId, output });
  const fail = (error) =>
    chat.addToolOutput({ tool: toolName, toolCallId, state: "output-error", errorText: error });
  tool(input, answer, fail);
}

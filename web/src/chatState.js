// What the page shows about the state of a chat, derived from the AI SDK's messages and status:
// whether it is thinking or answering, whether the last answer failed, whether it can be
// regenerated.

/** Whether an assistant message shows anything yet (else the page says it is thinking). */
function shows(message) {
  return (
    message?.role === "assistant" &&
    message.parts.some(
      (p) =>
        (p.type === "text" && p.text) ||
        p.type === "reasoning" ||
        p.type === "file" ||
        p.type === "dynamic-tool" ||
        p.type.startsWith("tool-"),
    )
  );
}

/** "thinking" (nothing to show yet), "streaming" (the answer shows), or null (not answering). */
export function progressOf(status, last) {
  return status === "submitted" || (status === "streaming" && !shows(last))
    ? "thinking"
    : status === "streaming"
      ? "streaming"
      : null;
}

/** Whether the chat failed: an error from the transport, or the server's data-error part. */
export function hasFailed(error, last) {
  return !!error || (last?.role === "assistant" && last.parts.some((p) => p.type === "data-error"));
}

/** Regenerate: SSE only (a live connection is one invocation, the server cannot rewind it),
 * and not while the answer waits for the user's approval (the card is what to answer). */
export function canRegenerate(mode, last, failed) {
  return (
    mode === "sse" &&
    last?.role === "assistant" &&
    !failed &&
    !last.parts.some((p) => p.state === "approval-requested")
  );
}

"use client";

import { useChat } from "@ai-sdk/react";
import {
  DefaultChatTransport,
  WebSocketChatTransport,
  getToolName,
  isToolUIPart,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  type UIMessage,
} from "ai";
import { useState } from "react";

// Both go to this Next.js server, whose rewrite (next.config.js) hands them to the agent.
const transports = {
  sse: new DefaultChatTransport({ api: "/agent/chat" }), // POST /agent/chat, streamed back
  live: new WebSocketChatTransport({ url: "/agent/live" }), // WS /agent/live (AI SDK v7)
};
type Mode = keyof typeof transports;

export function Chat() {
  const [mode, setMode] = useState<Mode>("sse");
  const { messages, sendMessage, addToolApprovalResponse, status, error } = useChat({
    transport: transports[mode], // the chat goes on in the other mode when it is switched
    // Once every approval of the answer is answered, send them: the agent then runs (or skips)
    // the tool and goes on.
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const [input, setInput] = useState("");
  const busy = status === "submitted" || status === "streaming";
  return (
    <section className="chat">
      <button
        type="button"
        className="mode"
        disabled={busy}
        onClick={() => setMode(mode === "sse" ? "live" : "sse")}
      >
        Mode: {mode === "sse" ? "SSE" : "Live"}
      </button>
      {messages.map((message) => (
        <Message key={message.id} message={message} onApprove={addToolApprovalResponse} />
      ))}
      {error && <p className="error">{error.message}</p>}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (!input.trim()) return;
          sendMessage({ text: input });
          setInput("");
        }}
      >
        <input
          aria-label="Message"
          value={input}
          onChange={(event) => setInput(event.target.value)}
          placeholder="Say something"
        />
        <button disabled={busy}>Send</button>
      </form>
    </section>
  );
}

type OnApprove = (response: { id: string; approved: boolean }) => void;

function Message({ message, onApprove }: { message: UIMessage; onApprove: OnApprove }) {
  return (
    <article className="message" data-role={message.role}>
      <b>{message.role === "user" ? "You" : "Assistant"}</b>
      {message.parts.map((part, index) => {
        if (part.type === "text") {
          return <p key={index}>{part.text}</p>;
        }
        if (!isToolUIPart(part)) {
          return null;
        }
        return (
          <div key={part.toolCallId} className="tool" data-state={part.state}>
            <code>
              {getToolName(part)}({JSON.stringify(part.input ?? {})})
            </code>
            {part.state === "approval-requested" && (
              <div className="approval">
                <button onClick={() => onApprove({ id: part.approval.id, approved: true })}>
                  Approve
                </button>
                <button onClick={() => onApprove({ id: part.approval.id, approved: false })}>
                  Deny
                </button>
              </div>
            )}
            {part.state === "output-available" && (
              <code className="output">{JSON.stringify(part.output)}</code>
            )}
            {part.state === "output-error" && <p className="error">{part.errorText}</p>}
            {part.state === "output-denied" && <p className="denied">Denied</p>}
          </div>
        );
      })}
    </article>
  );
}

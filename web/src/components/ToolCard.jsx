// A tool call in an answer: its name, state and input, its approval (Approve / Deny) when it asks
// for one, and its output, error or denial.
import { Approval } from "./Approval.jsx";

/** A tool call. One still asking for approval on a message the chat has moved past (a new
 * message was sent) is closed: the server no longer takes an answer to it. */
export function ToolCard({ part, closed, onApprove }) {
  const name = part.toolName ?? part.type.slice("tool-".length);
  const asking = part.state === "approval-requested";
  const gone = asking && closed;
  return (
    <div
      className="tool"
      data-tool={name}
      data-state={part.state}
      data-closed={gone ? "true" : undefined}
    >
      <div>
        <b>{name}</b> <span className="state">{gone ? "closed" : part.state}</span>
      </div>
      <code>input: {JSON.stringify(part.input ?? {})}</code>
      <Approval approvalId={part.approval?.id} asking={asking} gone={gone} onApprove={onApprove} />
      {part.state === "output-available" && (
        <code className="output">output: {JSON.stringify(part.output)}</code>
      )}
      {part.state === "output-error" && <p className="error">{part.errorText}</p>}
      {part.state === "output-denied" && <p className="denied">denied by the user</p>}
    </div>
  );
}

// The approval part of a tool card: Approve and Deny while the call asks for approval, or a note
// that the card is closed (a newer message was sent, so the server no longer takes an answer).
const CLOSED = "Closed: a new message was sent";

/** `asking`: the call waits for approval; `gone`: it does, but on a message the chat moved past. */
export function Approval({ approvalId, asking, gone, onApprove }) {
  return (
    <>
      {asking && !gone && (
        <div className="approval">
          <button
            type="button"
            className="approve primary"
            onClick={() => onApprove(approvalId, true)}
          >
            Approve
          </button>
          <button
            type="button"
            className="deny danger-outline"
            onClick={() => onApprove(approvalId, false)}
          >
            Deny
          </button>
        </div>
      )}
      {gone && <p className="closed-note">{CLOSED}</p>}
    </>
  );
}

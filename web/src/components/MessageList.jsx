// The scrolling message list: the messages, the chat's progress, Retry or Regenerate under the
// last answer, and ↓ Latest when the user scrolled away from the end (useFollow's box).
import { Message } from "./Message.jsx";
import { Progress } from "./Progress.jsx";
import { RetryIcon } from "./icons.jsx";

export function MessageList({
  follower: { box, onScroll, follow, away },
  messages,
  progress,
  busy,
  failed,
  canRegenerate,
  onApprove,
  onRetry,
  onRegenerate,
}) {
  return (
    <div className="scroll-area">
      <div className="scroller" ref={box} onScroll={onScroll}>
        <section className="messages" aria-live="polite">
          {messages.length === 0 && (
            <p className="empty">Ask something, or pick an example below.</p>
          )}
          {messages.map((message, index) => (
            <Message
              key={message.id}
              message={message}
              closed={index < messages.length - 1}
              onApprove={onApprove}
            />
          ))}
          {progress && <Progress kind={progress} />}
          {!busy && (failed || canRegenerate) && (
            <div className="actions">
              {failed ? (
                <button type="button" onClick={onRetry}>
                  <RetryIcon /> Retry
                </button>
              ) : (
                <button type="button" onClick={onRegenerate}>
                  <RetryIcon /> Regenerate
                </button>
              )}
            </div>
          )}
        </section>
      </div>
      {away && (
        <button type="button" className="to-latest" onClick={follow}>
          ↓ Latest
        </button>
      )}
    </div>
  );
}

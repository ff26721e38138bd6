// The chat's progress under the messages: Thinking… (nothing to show yet) or Answering….
export function Progress({ kind }) {
  return (
    <div className="progress" data-progress={kind} role="status">
      <span className="dots" aria-hidden="true">
        <i />
        <i />
        <i />
      </span>
      {kind === "thinking" ? "Thinking…" : "Answering…"}
    </div>
  );
}

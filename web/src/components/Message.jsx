// One message of the chat: its text (labelled with the agent that wrote it when that is not the
// root agent), files, reasoning, voice transcripts, errors and tool cards.
import { FilePart } from "./Attachments.jsx";
import { ToolCard } from "./ToolCard.jsx";

const ROOT_AGENT = "demo_agent"; // parts of another agent of the tree are labelled with its name

/** `closed`: a newer message follows, so this one's approvals can no longer be answered. */
export function Message({ message, closed, onApprove }) {
  return (
    <article className={`message ${message.role}`} data-role={message.role} data-id={message.id}>
      {message.parts.map((part, index) => {
        if (part.type === "text") {
          const author = part.providerMetadata?.adk?.author;
          return (
            <p key={index} data-author={author}>
              {author && author !== ROOT_AGENT && <b className="author">{author}: </b>}
              {part.text}
            </p>
          );
        }
        if (part.type === "file") return <FilePart key={index} part={part} />;
        if (part.type === "reasoning")
          return (
            <p key={index} className="reasoning">
              {part.text}
            </p>
          );
        if (part.type === "data-transcript")
          return (
            <p key={index} className="transcript">
              {part.data.role === "user" ? "You said" : "Heard"}: {part.data.text}
            </p>
          );
        if (part.type === "data-error")
          return (
            <div key={index} className="error-note">
              <b>Error:</b> {part.data?.errorText ?? "An error occurred."}
            </div>
          );
        if (part.type.startsWith("data-"))
          return <DataCard key={part.id ?? index} part={part} />;
        if (part.type.startsWith("tool-") || part.type === "dynamic-tool")
          return (
            <ToolCard key={part.toolCallId} part={part} closed={closed} onApprove={onApprove} />
          );
        return null;
      })}
      <AnswerFacts metadata={message.metadata} />
    </article>
  );
}

/** What the app's message metadata says of an answer (`AdkApp(message_metadata=…)`, as
 * docs/metadata.md shows it): its model and tokens. Nothing when the app sends none. */
function AnswerFacts({ metadata }) {
  if (!metadata?.model) return null;
  const tokens = metadata.totalTokens ? ` · ${metadata.totalTokens} tokens` : "";
  return <footer className="answer-facts">{`${metadata.model}${tokens}`}</footer>;
}

/** An app's own data part (`send_data` in a tool, docs/data-parts.md): its name and data, updated
 * in place when the app sends the same id again. */
function DataCard({ part }) {
  const name = part.type.slice("data-".length);
  return (
    <div className="data-part" data-name={name}>
      <b>{name}</b> <code>{JSON.stringify(part.data)}</code>
    </div>
  );
}

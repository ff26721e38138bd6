// The composer under the messages: the chat's error, the example prompts, the attached files and
// the notice about those refused, the input with its attach, Send and Stop buttons, and the
// chat's id and mode.
import { useRef } from "react";
import { ACCEPTED_FILES, MAX_FILE_BYTES, megabytes } from "../attachments.js";
import { page } from "../pageConfig.js";
import { MODES } from "../transports.js";
import { AttachmentList } from "./Attachments.jsx";
import { ClipIcon, StopIcon } from "./icons.jsx";

export function Composer({
  chatId,
  mode,
  error,
  busy,
  input,
  inputRef,
  onInput,
  attachments: { files, notice, addFiles, removeFile },
  onSend,
  onStop,
}) {
  const fileRef = useRef(null);
  return (
    <footer className="composer">
      {error && (
        <p className="error" role="alert">
          Error: {error.message}
        </p>
      )}
      <div className="examples">
        {page.examples.map((text) => (
          <button type="button" key={text} disabled={busy} onClick={() => onSend(text)}>
            {text}
          </button>
        ))}
      </div>
      {files.length > 0 && <AttachmentList files={files} onRemove={removeFile} />}
      {notice && (
        <p className="notice" role="status">
          {notice}
        </p>
      )}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (onSend(input)) onInput("");
        }}
      >
        <input
          ref={fileRef}
          type="file"
          multiple
          hidden
          accept={ACCEPTED_FILES}
          aria-label="Files to attach"
          onChange={(event) => {
            void addFiles(event.target.files);
            event.target.value = "";
          }}
        />
        <button
          type="button"
          className="attach icon"
          aria-label="Attach files"
          title={`Attach images, PDF or text (up to ${megabytes(MAX_FILE_BYTES)})`}
          onClick={() => fileRef.current.click()}
        >
          <ClipIcon />
        </button>
        <input
          ref={inputRef}
          className="text"
          aria-label="Message"
          placeholder="Ask something…"
          autoFocus
          value={input}
          onChange={(event) => onInput(event.target.value)}
          onPaste={(event) => {
            const pasted = event.clipboardData.files;
            if (pasted.length) void addFiles(pasted);
          }}
        />
        {busy ? (
          <button type="button" className="stop danger" onClick={onStop}>
            <StopIcon /> Stop
          </button>
        ) : (
          <button type="submit" className="send primary">
            Send
          </button>
        )}
      </form>
      <p className="chat-id">
        chat <code>{chatId}</code> · {MODES[mode]}
      </p>
    </footer>
  );
}

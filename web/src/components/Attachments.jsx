// Files in the chat: a file part shown as a thumbnail (an image) or a download link, and the
// list of files attached to the message being written, each with its remove button.
import { FileIcon } from "./icons.jsx";

export function FilePart({ part }) {
  const image = part.mediaType?.startsWith("image/");
  const name = part.filename || (image ? "image" : "file");
  if (image) return <img className="thumb" src={part.url} alt={name} title={name} />;
  return (
    <a className="file" href={part.url} download={name}>
      <FileIcon /> {name}
    </a>
  );
}

export function AttachmentList({ files, onRemove }) {
  return (
    <ul className="attachments" aria-label="Attachments">
      {files.map((file, index) => (
        <li key={index}>
          <FilePart part={file} />
          <button
            type="button"
            className="icon"
            aria-label={`Remove ${file.filename}`}
            onClick={() => onRemove(index)}
          >
            ✕
          </button>
        </li>
      ))}
    </ul>
  );
}

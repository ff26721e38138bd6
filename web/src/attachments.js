// Files attached to a message: what a message may carry, reading a file into the AI SDK's file
// part (a base64 data: URL), and which picked files fit.
// A request body is at most 4 MiB (AdkApp's max_body_size) and a file goes as a base64 data:
// URL (4/3 of its size), so a message carries at most 2 MiB of files.
export const MAX_FILE_BYTES = 2 * 1024 * 1024;
export const ACCEPTED_FILES = "image/*,application/pdf,text/plain,text/csv,text/markdown";

/** A file as a FileUIPart, with its `size` (to count against MAX_FILE_BYTES; not sent). */
export function readFile(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () =>
      resolve({
        type: "file",
        mediaType: file.type || "application/octet-stream",
        filename: file.name,
        url: reader.result,
        size: file.size,
      });
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

export function megabytes(bytes) {
  return `${(bytes / 1024 / 1024).toFixed(1).replace(/\.0$/, "")} MB`;
}

/** `picked` files split into those that fit in `room` bytes, in order, and those refused. */
export function fitFiles(picked, room) {
  const fitting = [];
  const refused = [];
  for (const file of picked) {
    if (file.size > room) refused.push(file);
    else {
      fitting.push(file);
      room -= file.size;
    }
  }
  return { fitting, refused };
}

/** What the user is told of refused files (undefined when none was). */
export function refusalNotice(refused) {
  return refused.length
    ? `${refused.map((f) => `"${f.name}" (${megabytes(f.size)})`).join(", ")} not attached: ` +
        `a message can carry ${megabytes(MAX_FILE_BYTES)} of files.`
    : undefined;
}

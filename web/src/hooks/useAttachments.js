// useAttachments: the files attached to the message being written (FileUIParts with their size),
// and the notice about files that did not fit.
import { useState } from "react";
import { fitFiles, MAX_FILE_BYTES, readFile, refusalNotice } from "../attachments.js";

/** `onAdded` runs once picked files are read and attached. */
export function useAttachments(onAdded) {
  const [files, setFiles] = useState([]); // FileUIPart[] (with their size) to send
  const [notice, setNotice] = useState();

  const addFiles = async (list) => {
    const room = MAX_FILE_BYTES - files.reduce((total, f) => total + f.size, 0);
    const { fitting, refused } = fitFiles([...list], room);
    setNotice(refusalNotice(refused));
    const parts = await Promise.all(fitting.map(readFile));
    setFiles((before) => [...before, ...parts]);
    onAdded();
  };
  const removeFile = (index) => setFiles(files.filter((_, i) => i !== index));
  /** The parts to send: the files without their size. */
  const attachedParts = () => files.map(({ size, ...part }) => part);
  /** Once sent: no file, no notice. */
  const clearFiles = () => {
    setFiles([]);
    setNotice(undefined);
  };
  return { files, notice, addFiles, removeFile, attachedParts, clearFiles };
}

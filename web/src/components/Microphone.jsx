// The voice mode's microphone button: Talk starts the microphone on the live transport, Stop
// talking ends it and fetches the model's answer.
import { useEffect, useRef, useState } from "react";

export function Microphone({ voice, chat }) {
  const [mic, setMic] = useState();
  const [trouble, setTrouble] = useState();
  const current = useRef();
  current.current = mic;
  useEffect(() => () => current.current?.stop(), []); // leaving the chat stops the microphone
  const toggle = async () => {
    setTrouble(undefined);
    if (mic) {
      mic.stop();
      setMic(undefined);
      chat.resumeStream(); // the model answers a voice turn without a request: fetch it
      return;
    }
    try {
      setMic(await voice.startMicrophone());
    } catch (error) {
      setTrouble(`Microphone: ${error.message}`);
    }
  };
  return (
    <>
      <button type="button" className={mic ? "mic on" : "mic"} onClick={toggle}>
        {mic ? "Stop talking" : "Talk"}
      </button>
      {trouble && <span className="error">{trouble}</span>}
    </>
  );
}

// What the background music plays, with the AudioContext's state and the notes scheduled so far
// as data attributes (the bgm test checks the music is really playing). Its own component: the
// note count changes several times a second.
import { stopMusic, useAudio, useNowPlaying } from "../browserTools/music.js";

export function NowPlaying() {
  const track = useNowPlaying();
  const audio = useAudio();
  if (!track) return null;
  return (
    <p className="music" data-audio={audio.state} data-notes={audio.notes}>
      ♪ Now playing: track {track}{" "}
      <button type="button" onClick={stopMusic}>
        Stop music
      </button>
    </p>
  );
}

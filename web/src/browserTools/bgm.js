// The `change_bgm` browser tool: play background music track 1, 2 or 3 (music.js).
import { playTrack } from "./music.js";

export function changeBgm(input, answer, fail) {
  try {
    playTrack(input.track);
    answer({ playing: input.track });
  } catch (error) {
    fail(error.message);
  }
}

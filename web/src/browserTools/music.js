// Background music for the `change_bgm` browser tool: three little arpeggios made with Web Audio
// oscillators (no audio files). `useNowPlaying()` lets React show what is playing, `useAudio()`
// whether it is audible: the AudioContext's state and how many notes the track has scheduled
// (they keep coming only while the context's clock runs).
import { useSyncExternalStore } from "react";

// an oscillator shape, seconds per note, and the notes (Hz) played in a loop
export const TRACKS = {
  1: { wave: "sine", beat: 0.4, notes: [220, 277.18, 329.63, 440] }, // A major
  2: { wave: "triangle", beat: 0.25, notes: [261.63, 311.13, 392, 466.16, 392, 311.13] }, // Cm7
  3: { wave: "square", beat: 0.15, notes: [196, 246.94, 293.66, 392, 293.66, 246.94] }, // G major
};

let context;
let timer;
let nowPlaying = null;
let audio = { state: "none", notes: 0 };
const listeners = new Set();

function changed() {
  for (const listener of listeners) listener();
}

function setNowPlaying(track) {
  nowPlaying = track;
  changed();
}

function setAudio(update) {
  audio = { ...audio, ...update };
  changed();
}

const subscribe = (listener) => (listeners.add(listener), () => listeners.delete(listener));

export function useNowPlaying() {
  return useSyncExternalStore(subscribe, () => nowPlaying);
}

export function useAudio() {
  return useSyncExternalStore(subscribe, () => audio);
}

function note(frequency, at, { wave, beat }) {
  const osc = context.createOscillator();
  const gain = context.createGain();
  osc.type = wave;
  osc.frequency.value = frequency;
  gain.gain.setValueAtTime(0.0001, at);
  gain.gain.exponentialRampToValueAtTime(0.05, at + 0.02);
  gain.gain.exponentialRampToValueAtTime(0.0001, at + beat * 0.9);
  osc.connect(gain).connect(context.destination);
  osc.start(at);
  osc.stop(at + beat);
}

/** Start track 1, 2 or 3 (replacing the one playing); throws for any other number. */
export function playTrack(number) {
  const track = TRACKS[number];
  if (!track) throw new Error(`There is no track ${number}; pick 1, 2 or 3.`);
  stopMusic();
  if (!context) {
    context = new AudioContext();
    context.onstatechange = () => setAudio({ state: context.state });
  }
  void context.resume();
  let next = context.currentTime + 0.05;
  let index = 0;
  const schedule = () => {
    // keep half a second of notes scheduled ahead
    const before = index;
    while (next < context.currentTime + 0.5) {
      note(track.notes[index++ % track.notes.length], next, track);
      next += track.beat;
    }
    if (index !== before) setAudio({ notes: index });
  };
  setAudio({ state: context.state, notes: 0 });
  schedule();
  timer = setInterval(schedule, 200);
  setNowPlaying(number);
}

export function stopMusic() {
  clearInterval(timer);
  setNowPlaying(null);
}

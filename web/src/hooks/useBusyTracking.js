// useBusyTracking: tells the page whether the open chat is answering (`onBusy`), and when an
// answer ended (`onAnswered`: the chat list shows titles and order as of the last answer).
import { useEffect, useRef } from "react";

export function useBusyTracking(busy, onBusy, onAnswered) {
  const wasBusy = useRef(false);
  useEffect(() => {
    onBusy(busy);
    if (wasBusy.current && !busy) onAnswered();
    wasBusy.current = busy;
  }, [busy, onBusy, onAnswered]);
}

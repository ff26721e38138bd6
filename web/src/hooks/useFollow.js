// useFollow: a scroll box (the message list) that keeps the newest message in view while the
// user is at its end.
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from "react";

/** A scroll box that follows its content's end while the user is there: `follow()` after the
 * user sends; scrolling up stops the following (`away`), scrolling back down resumes it. */
export function useFollow() {
  const box = useRef(null);
  const following = useRef(true);
  const pinned = useRef(0); // scrollTop as following left it
  const [away, setAway] = useState(false);
  const atEnd = (element) => element.scrollHeight - element.scrollTop - element.clientHeight < 40;
  const follow = useCallback(() => {
    const element = box.current;
    if (!element) return;
    element.scrollTop = element.scrollHeight;
    pinned.current = element.scrollTop;
    following.current = true;
    setAway(false);
  }, []);
  const onScroll = useCallback(() => {
    const element = box.current;
    following.current = atEnd(element);
    if (following.current) pinned.current = element.scrollTop;
    setAway(!following.current);
  }, []);
  // new content (after every render; and whenever the box or its content changes size: an image
  // loaded, the input bar grew): to the end, unless the user scrolled up. The scroll event of
  // that may not have come yet: a scrollTop above where following left it says so too.
  const keepUp = useCallback(() => {
    const element = box.current;
    if (!element || !following.current) return;
    if (element.scrollTop < pinned.current - 1 && !atEnd(element)) {
      following.current = false;
      setAway(true);
      return;
    }
    follow();
  }, [follow]);
  useLayoutEffect(keepUp);
  useEffect(() => {
    const element = box.current;
    const observer = new ResizeObserver(keepUp);
    observer.observe(element);
    if (element.firstElementChild) observer.observe(element.firstElementChild);
    return () => observer.disconnect();
  }, [keepUp]);
  return { box, onScroll, follow, away };
}

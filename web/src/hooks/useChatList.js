// useChatList: the user's chats for the sidebar (GET /agent/chats, a page at a time), and what
// went wrong with the list (loading it, or deleting a chat).
import { useCallback, useRef, useState } from "react";
import { fetchChats } from "../api.js";

/** The chats the server sends at once by default, and at most (`?limit=`). */
const PAGE = 50;
const MOST = 200;

export function useChatList() {
  const [chats, setChats] = useState();
  const [next, setNext] = useState();
  const [listProblem, setListProblem] = useState();
  const shown = useRef(0);
  const show = useCallback((page, older = []) => {
    const listed = [...older, ...page.chats];
    shown.current = listed.length;
    setChats(listed);
    setNext(page.next);
    setListProblem(undefined);
    return listed;
  }, []);
  /** GET /agent/chats into the sidebar, as many as it shows now (older pages it loaded stay);
   * the list, or undefined when it failed. */
  const refreshChats = useCallback(async () => {
    const limit = Math.min(Math.max(shown.current, PAGE), MOST);
    try {
      return show(await fetchChats(`/agent/chats?limit=${limit}`));
    } catch (error) {
      setListProblem(error.message);
    }
  }, [show]);
  /** The next page of older chats, after those shown. */
  const loadOlder = useCallback(async () => {
    if (!next) return;
    try {
      show(await fetchChats(next), chats ?? []);
    } catch (error) {
      setListProblem(error.message);
    }
  }, [chats, next, show]);
  return { chats, next, listProblem, setListProblem, refreshChats, loadOlder };
}

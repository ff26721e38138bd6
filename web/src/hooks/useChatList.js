// useChatList: the user's chats for the sidebar (GET /agent/chats), and what went wrong with
// the list (loading it, or deleting a chat).
import { useCallback, useState } from "react";
import { fetchChats } from "../api.js";

export function useChatList() {
  const [chats, setChats] = useState();
  const [listProblem, setListProblem] = useState();
  /** GET /agent/chats into the sidebar; the list, or undefined when it failed. */
  const refreshChats = useCallback(async () => {
    try {
      const listed = await fetchChats();
      setChats(listed);
      setListProblem(undefined);
      return listed;
    } catch (error) {
      setListProblem(error.message);
    }
  }, []);
  return { chats, listProblem, setListProblem, refreshChats };
}

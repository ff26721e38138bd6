import { Chat } from "./chat";

const TRY = 'call process_payment {"amount": 5, "recipient": "alice"}';

export default function Home() {
  return (
    <main>
      <h1>Assistant</h1>
      <p className="hint">
        Without a Gemini key the agent echoes you, and runs a tool when told to: <code>{TRY}</code>
      </p>
      <Chat />
    </main>
  );
}

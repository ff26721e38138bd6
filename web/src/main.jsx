import { createRoot } from "react-dom/client";
import { App } from "./App.jsx";
import { loadPage } from "./pageConfig.js";
import "./style.css";

loadPage().then(() => createRoot(document.getElementById("root")).render(<App />));

// The console's entry point: styles, and the app in #app. Loaded by index.html as the
// one script of the page (the Content-Security-Policy allows no other).

import "diff2html/bundles/css/diff2html.min.css";
import "./styles.css";
import { render } from "preact";
import { App } from "./app.js";

const root = document.getElementById("app");
if (root) render(<App />, root);

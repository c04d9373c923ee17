// Syntax highlighting for the file view and diffs: highlight.js's core with the languages
// a workspace mostly holds (registered one by one, so the bundle carries only these).
// Its output is text escaped into `<span class="hljs-…">`: it goes through safe_html.ts's
// sanitizer all the same, and is coloured by classes in styles.css (no inline style).

import type { HighlightResult } from "highlight.js";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import c from "highlight.js/lib/languages/c";
import css from "highlight.js/lib/languages/css";
import go from "highlight.js/lib/languages/go";
import ini from "highlight.js/lib/languages/ini";
import java from "highlight.js/lib/languages/java";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import markdown from "highlight.js/lib/languages/markdown";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import { closeTags } from "diff2html/lib-esm/ui/js/highlight.js-helpers.js";

const LANGUAGES = { bash, c, css, go, ini, java, javascript, json, markdown, python, rust, sql, typescript, xml, yaml };
for (const [name, language] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, language);
// Names a file's extension gives that the languages do not list as aliases.
hljs.registerAliases(["toml", "cfg", "conf"], { languageName: "ini" });
hljs.registerAliases(["h"], { languageName: "c" });
hljs.registerAliases(["mjs", "cjs"], { languageName: "javascript" });
hljs.registerAliases(["mts", "cts"], { languageName: "typescript" });
hljs.registerAliases(["svg", "htm"], { languageName: "xml" });
hljs.registerAliases(["yml"], { languageName: "yaml" });

/** Past this many characters a file or a diff is shown without colours: highlighting is
 * work on the page's one thread, and a large file reads as well plain. */
export const HIGHLIGHT_LIMIT = 200_000;

/** The language of a path, by its extension or name; "" when none of ours. */
export function languageOf(path: string): string {
  const name = path.split("/").pop() ?? "";
  const dot = name.lastIndexOf(".");
  if (dot < 0) return "";
  const extension = name.slice(dot + 1).toLowerCase();
  return hljs.getLanguage(extension) ? extension : "";
}

/** `text` as highlighted HTML (escaped text in spans), or undefined when not highlighted. */
export function highlighted(text: string, language: string): string | undefined {
  if (!language || text.length > HIGHLIGHT_LIMIT || !hljs.getLanguage(language)) return undefined;
  return hljs.highlight(text, { language, ignoreIllegals: true }).value;
}

/** One line of a diff highlighted, its spans closed at its end (a diff's lines are drawn
 * one by one); `language` must be one `languageOf` gave. */
export function highlightedLine(text: string, language: string): HighlightResult {
  return closeTags(hljs.highlight(text, { language, ignoreIllegals: true }));
}

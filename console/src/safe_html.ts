// The only three ways untrusted content becomes markup in the console: Markdown (the
// model's text, a plan, a .md file's preview), a unified diff (an approval's, GetDiff's)
// and a file's code highlighted (highlight.ts: escaped text in spans). Everything else is
// put in the page as text (Preact makes text nodes of strings).
//
// Two walls each. Markdown goes through markdown-it with raw HTML off (`html: false`: a
// `<script>` in the source comes out as the text "<script>") and its link check (no
// `javascript:`, `vbscript:`, `file:` or non-image `data:` URLs). A diff goes through
// diff2html, which escapes every line it prints. Then both outputs go through DOMPurify,
// with images, forms, styles and every event handler attribute forbidden, and links made
// to open in a new tab without an opener. The page's Content-Security-Policy (no inline
// script, no eval) is the third wall, and the browser tests check that none of these is
// ever reached: a violation report fails them.

import { html as diffHtml, parse as parseDiff } from "diff2html";
import { mergeStreams, nodeStream } from "diff2html/lib-esm/ui/js/highlight.js-helpers.js";
import DOMPurify from "dompurify";
import MarkdownIt from "markdown-it";
import { HIGHLIGHT_LIMIT, highlighted, highlightedLine, languageOf } from "./highlight.js";

const markdown = new MarkdownIt({ html: false, linkify: true, breaks: true, typographer: false });

const purifier = DOMPurify();
const FORBID_TAGS = ["img", "picture", "source", "video", "audio", "iframe", "object", "embed", "form", "input", "button", "textarea", "select", "style", "link", "meta", "base", "svg", "math"];
const FORBID_ATTR = ["style", "srcset", "action", "formaction", "background", "poster"];
// Only web links and in-page anchors stay links.
const SAFE_URL = /^(?:https?:|mailto:|#)/i;

purifier.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    const href = node.getAttribute("href") ?? "";
    if (!SAFE_URL.test(href.trim())) {
      node.removeAttribute("href");
    } else {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer nofollow");
    }
  }
});

function purify(html: string, extraTags: string[] = []): string {
  return purifier.sanitize(html, {
    FORBID_TAGS: FORBID_TAGS.filter((tag) => !extraTags.includes(tag)),
    FORBID_ATTR,
    ALLOW_DATA_ATTR: false,
    ALLOW_ARIA_ATTR: true,
    RETURN_TRUSTED_TYPE: false,
  }) as string;
}

/** Untrusted Markdown as sanitized HTML. */
export function markdownHtml(source: string): string {
  return purify(markdown.render(unlazy(source)));
}

const LIST_ITEM = /^\s{0,3}(?:[-*+]|\d{1,9}[.)])\s+\S/;
const FENCE = /^\s{0,3}(`{3,}|~{3,})/;

/** A line right after a list item, not indented and no item itself, stands as a line of
 * its own: models write "1. run it" then "Done." meaning two things, which CommonMark
 * would read as one (a "lazy continuation" of the item). As `breaks` keeps each line a
 * line, this keeps each such line out of the item before it. Fenced code is left alone. */
export function unlazy(source: string): string {
  const lines = source.split("\n");
  const out: string[] = [];
  let fence = "";
  let inItem = false;
  for (const line of lines) {
    const opened = FENCE.exec(line);
    if (fence) {
      if (opened && opened[1][0] === fence[0] && opened[1].length >= fence.length) fence = "";
      out.push(line);
      continue;
    }
    if (opened) fence = opened[1];
    const item = LIST_ITEM.test(line);
    if (inItem && !item && !opened && line.trim() && !/^\s/.test(line)) out.push("");
    inItem = item || (inItem && /^\s+\S/.test(line));
    out.push(line);
  }
  return out.join("\n");
}

/** An untrusted unified diff as sanitized HTML (diff2html's line-by-line view). */
export function diffAsHtml(diff: string): string {
  // Blitz's diffs are plain unified diffs: a created or deleted file is told by /dev/null
  // alone, which diff2html reads as a rename unless told.
  const files = parseDiff(diff);
  for (const file of files) {
    if (file.oldName === "/dev/null") {
      file.isNew = true;
      file.oldName = file.newName;
    } else if (file.newName === "/dev/null") {
      file.isDeleted = true;
      file.newName = file.oldName;
    }
  }
  const rendered = diffHtml(files, {
    drawFileList: false,
    outputFormat: "line-by-line",
    matching: "lines",
    diffStyle: "word",
    renderNothingWhenEmpty: false,
  });
  // diff2html's file icons are inline SVG it writes itself; nothing of the diff is in them.
  return purify(diff.length > HIGHLIGHT_LIMIT ? rendered : highlightDiff(rendered), ["svg"]);
}

/** A file's text as highlighted, sanitized HTML for a `<code>`; undefined when its kind
 * is none of highlight.ts's languages, or it is too large (then show it as text). */
export function codeHtml(text: string, path: string): string | undefined {
  const html = highlighted(text, languageOf(path));
  return html === undefined ? undefined : purify(html);
}

/** diff2html's diff with each line of code highlighted for its file's language (its
 * `data-lang`, which the sanitizer drops after), the word-level marks of a changed line
 * kept, as diff2html's own UI does it. Worked on in a template's content, which is inert:
 * nothing in it loads or runs, and all of it is sanitized after. */
function highlightDiff(html: string): string {
  const template = document.createElement("template");
  template.innerHTML = html;
  for (const file of template.content.querySelectorAll(".d2h-file-wrapper")) {
    const language = languageOf(`file.${file.getAttribute("data-lang") ?? ""}`);
    if (!language) continue;
    for (const line of file.querySelectorAll(".d2h-code-line-ctn")) {
      const text = line.textContent ?? "";
      const result = highlightedLine(text, language);
      const marks = nodeStream(line);
      if (marks.length) {
        const colours = document.createElement("div");
        colours.innerHTML = result.value;
        result.value = mergeStreams(marks, nodeStream(colours), text);
      }
      line.innerHTML = result.value;
      line.classList.add("hljs");
    }
  }
  return template.innerHTML;
}

// The only two ways untrusted content becomes markup in the console: Markdown (the
// model's text, a plan) and a unified diff (an approval's, GetDiff's). Everything else is
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
import DOMPurify from "dompurify";
import MarkdownIt from "markdown-it";

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
  return purify(markdown.render(source));
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
  return purify(rendered, ["svg"]);
}

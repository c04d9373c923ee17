// highlight.js's core alone (the languages are registered one by one, highlight.ts): its
// types are the whole package's, which ship under the package's own name only.
declare module "highlight.js/lib/core" {
  import hljs from "highlight.js";
  export default hljs;
}

// Vite's `?raw` imports: the file's text as a string, bundled (the receiver snippets of docs/snippets,
// shown by the overview's setup checklist exactly as the tests run them).
declare module '*?raw' {
  const text: string;
  export default text;
}

// The documented shapes of what integrations POST (docs/integrations.md#messages cites the pages),
// written here from the platforms' documentation, independently of src/modules/integrations/chat-render.ts:
//
// Slack (https://docs.slack.dev/reference/block-kit/blocks/header-block, …/section-block,
// …/context-block, https://docs.slack.dev/reference/methods/chat.postMessage,
// https://api.slack.com/reference/surfaces/formatting#escaping): a message has at most
// 50 blocks; `text` is the notification fallback when blocks are given (Slack truncates it at 40,000
// characters); a header's plain_text is 1 to 150 characters; a section has `text` (1 to 3000) and/or
// `fields` (1 to 10 text objects of 1 to 2000); a context has 1 to 10 elements; a text object is
// `plain_text` or `mrkdwn`; in mrkdwn, `&`, `<` and `>` are control characters and must be escaped.
//
// Discord (https://discord.com/developers/docs/resources/message#embed-object-embed-limits,
// https://discord.com/developers/docs/resources/webhook#execute-webhook): up to 10 embeds; title
// 256, description 4096, up to 25 fields of name 256 and value 1024 (both required, non-empty), footer
// text 2048, author name 256; in all, at most 6000 characters across the titles, descriptions, field
// names and values, footer texts and author names of every embed of the message; `color` an integer
// (0 to 0xFFFFFF); `timestamp` ISO 8601; `content` at most 2000.

type Obj = Record<string, unknown>;
const len = (s: string) => [...s].length;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function text(problems: string[], where: string, v: unknown, max: number, types = ['plain_text', 'mrkdwn']): void {
  if (!isObj(v)) {
    problems.push(`${where}: not a text object`);
    return;
  }
  if (typeof v.type !== 'string' || !types.includes(v.type)) problems.push(`${where}.type: ${String(v.type)}`);
  if (typeof v.text !== 'string' || len(v.text) < 1 || len(v.text) > max) {
    problems.push(`${where}.text: ${typeof v.text === 'string' ? len(v.text) : typeof v.text} characters, 1..${max}`);
  } else if (v.type === 'mrkdwn') mrkdwn(problems, `${where}.text`, v.text);
}

/** Raw `<`, `>` or a bare `&` in mrkdwn (Slack's escaping: &amp; &lt; &gt;). */
function mrkdwn(problems: string[], where: string, s: string) {
  if (/[<>]/.test(s) || /&(?!amp;|lt;|gt;)/.test(s)) problems.push(`${where}: unescaped &, < or > in mrkdwn`);
}

/** Every way `body` breaks Slack's documented incoming-webhook message shape; [] when it fits. */
export function slackProblems(body: unknown): string[] {
  const p: string[] = [];
  if (!isObj(body)) return ['body: not an object'];
  if (typeof body.text !== 'string' || len(body.text) < 1 || len(body.text) > 40_000) p.push('text: 1..40000');
  else mrkdwn(p, 'text', body.text);
  const blocks = body.blocks;
  if (!Array.isArray(blocks) || blocks.length < 1 || blocks.length > 50) return [...p, 'blocks: 1..50'];
  blocks.forEach((b, i) => {
    const at = `blocks[${i}]`;
    if (!isObj(b)) {
      p.push(`${at}: not an object`);
      return;
    }
    if (b.type === 'header') text(p, `${at}.text`, b.text, 150, ['plain_text']);
    else if (b.type === 'section') {
      if (b.text === undefined && b.fields === undefined) p.push(`${at}: neither text nor fields`);
      if (b.text !== undefined) text(p, `${at}.text`, b.text, 3000);
      if (b.fields !== undefined) {
        if (!Array.isArray(b.fields) || b.fields.length < 1 || b.fields.length > 10) p.push(`${at}.fields: 1..10`);
        else for (const [j, f] of b.fields.entries()) text(p, `${at}.fields[${j}]`, f, 2000);
      }
    } else if (b.type === 'context') {
      if (!Array.isArray(b.elements) || b.elements.length < 1 || b.elements.length > 10) {
        p.push(`${at}.elements: 1..10`);
      } else for (const [j, e] of b.elements.entries()) text(p, `${at}.elements[${j}]`, e, 3000);
    } else p.push(`${at}.type: ${String(b.type)} not expected`);
  });
  return p;
}

/** Every way `body` breaks Discord's documented execute-webhook shape and embed limits; [] when it fits. */
export function discordProblems(body: unknown): string[] {
  const p: string[] = [];
  if (!isObj(body)) return ['body: not an object'];
  if (body.content !== undefined && (typeof body.content !== 'string' || len(body.content) > 2000)) {
    p.push('content: at most 2000');
  }
  const embeds = body.embeds;
  if (!Array.isArray(embeds) || embeds.length < 1 || embeds.length > 10) return [...p, 'embeds: 1..10'];
  let total = 0;
  const str = (at: string, v: unknown, max: number, min = 0) => {
    if (v === undefined && min === 0) return;
    if (typeof v !== 'string' || len(v) < min || len(v) > max) p.push(`${at}: ${min}..${max} characters`);
    else total += len(v);
  };
  embeds.forEach((e, i) => {
    const at = `embeds[${i}]`;
    if (!isObj(e)) {
      p.push(`${at}: not an object`);
      return;
    }
    str(`${at}.title`, e.title, 256);
    str(`${at}.description`, e.description, 4096);
    if (
      e.color !== undefined &&
      !(Number.isInteger(e.color) && (e.color as number) >= 0 && (e.color as number) <= 0xffffff)
    ) {
      p.push(`${at}.color: an integer 0..0xFFFFFF`);
    }
    if (e.timestamp !== undefined && (typeof e.timestamp !== 'string' || Number.isNaN(Date.parse(e.timestamp)))) {
      p.push(`${at}.timestamp: ISO 8601`);
    }
    if (e.fields !== undefined) {
      if (!Array.isArray(e.fields) || e.fields.length > 25) p.push(`${at}.fields: at most 25`);
      else
        e.fields.forEach((f, j) => {
          if (!isObj(f)) {
            p.push(`${at}.fields[${j}]: not an object`);
            return;
          }
          str(`${at}.fields[${j}].name`, f.name, 256, 1);
          str(`${at}.fields[${j}].value`, f.value, 1024, 1);
          if (f.inline !== undefined && typeof f.inline !== 'boolean') p.push(`${at}.fields[${j}].inline: boolean`);
        });
    }
    if (e.footer !== undefined) {
      if (!isObj(e.footer)) p.push(`${at}.footer: not an object`);
      else str(`${at}.footer.text`, e.footer.text, 2048, 1);
    }
    if (e.author !== undefined) str(`${at}.author.name`, isObj(e.author) ? e.author.name : undefined, 256, 1);
  });
  if (total > 6000) p.push(`embeds: ${total} characters in all, at most 6000`);
  return p;
}

// Package format owns the pure text layer between the LLM's Markdown replies
// and Telegram: converting Markdown to the HTML subset Telegram accepts with
// parse_mode=HTML (Render), stripping Markdown to plain text for the fallback
// when Telegram answers "can't parse entities" (Plain), and cutting a long
// reply into messages that fit Telegram's limit (Split for HTML, SplitPlain
// for plain text). It does no I/O and keeps no state; every function is safe
// for concurrent use.
//
// # Render
//
// Render parses CommonMark plus the GFM extras LLMs use (tables, ~~strike~~,
// bare-URL links, task lists) with github.com/yuin/goldmark and writes only
// these tags: <b>, <i>, <s>, <code>, <pre>, <pre><code class="language-…">,
// <a href="…"> and <blockquote>. Telegram has no block structure, so:
//
//   - headings become bold lines;
//   - list items become "• item" / "1. item" lines, nested items indented by
//     the width of their parent's marker; task items show ☐ / ☑;
//   - tables become a <pre> block of aligned columns (CJK and emoji count as
//     two columns);
//   - images become links to the image (their alt text is the link text);
//   - a thematic break becomes a line of "─";
//   - raw HTML in the input, inline or block, is shown as escaped text and
//     never passed through;
//   - links are kept only for the schemes http, https (with a host), tg and
//     mailto; any other link is rendered as its text;
//   - single tildes (~5 min) are literal; only ~~double~~ strikes through.
//
// Render also keeps to Telegram's nesting rules: nothing nests inside <code>
// or <pre> (code keeps its content verbatim, escaped), <code> is not nested
// inside <a> (the code is written as plain link text), links and blockquotes
// do not nest (inner ones are flattened), and a tag is not reopened inside
// itself. Empty elements are never written. &, < and > are escaped
// everywhere; the only entities written are &lt;, &gt;, &amp; and &quot;.
// Invalid UTF-8 and NUL bytes become U+FFFD, CRLF becomes LF. Indentation
// stops growing after 24 columns, however deep the nesting. Markdown that
// renders to nothing visible ("#") is shown as its source text, so Render
// returns "" only for empty or white-space-only input.
//
// Parsing time is goldmark's: linear for ordinary text, but superlinear for
// adversarial input such as tens of thousands of nested ">" or unclosed
// "[a](" (about a second for 20 KB).
//
// # Split
//
// Telegram's limit (4096) counts the text of a message after entity parsing,
// in UTF-16 code units. Split therefore measures only the text a part shows:
// tags count zero, an entity counts as the character it stands for, a
// character outside the Basic Multilingual Plane counts two. The raw HTML of
// a part is NOT bounded by the limit: Telegram does not limit it, and
// bounding it would shrink parts up to five-fold for text full of & or <
// (code!) for no benefit.
//
// A part is cut, in order of preference, at a blank line (a run of two or
// more newlines), at a newline, at a run of spaces or tabs, provided the part
// is then at least half the limit; otherwise it is cut at the limit itself,
// backing off (at most 32 characters) so as not to separate a character from
// what extends it: combining marks, variation selectors, skin-tone
// modifiers, zero-width joiners, the second half of a flag. A cut never
// falls inside a UTF-16 surrogate pair or an HTML entity. Formatting open at
// a cut (<b>, <a href="…">, <pre><code class="…">, <blockquote>, …) is
// closed at the end of the part and reopened, with the same attributes, at
// the start of the next, so each part is valid on its own. Elements a cut
// leaves empty are not written.
//
// Guarantees of Split and SplitPlain, for limit ≥ 2 (a limit below 1 means
// Limit; with limit 1 a character outside the BMP gets a part of its own,
// two units long):
//
//   - every part's text is at most limit UTF-16 code units;
//   - every part's text contains a character that is not white space
//     (Telegram refuses empty messages), so text that is empty or only white
//     space gives no parts;
//   - the texts of the parts, in order, are consecutive pieces of the input
//     text, nothing duplicated or reordered, with only white space between
//     them. White space is dropped only at cuts: the separator a part was cut
//     at (the whole run of newlines, or of spaces and tabs), white space that
//     would have filled a part on its own, and white space after the last
//     cut when nothing else follows. A hard cut drops nothing;
//   - for Split, every part of well-formed input (such as Render's output)
//     is well-formed: tags balanced and properly nested. Split does not
//     sanitize: it expects Telegram HTML, passes text through as is, drops
//     close tags that match nothing and closes tags left open.
package format

//! A tiny document model rendered two ways: Markdown (figures as linked SVG files) and a
//! self-contained HTML page (figures as PNG data URIs, CSS inline, no external request).
//!
//! It knows nothing of results: `build` fills it. Inline text may use `code` spans only.

/// One block of the report.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Heading(u8, String),
    Para(String),
    Quote(String),
    /// A bulleted list of inline texts.
    List(Vec<String>),
    /// Header cells, then rows; cells are inline text.
    Table(Vec<String>, Vec<Vec<String>>),
    Code {
        lang: String,
        text: String,
    },
    /// A figure: file stem, title, caption.
    Figure {
        name: String,
        title: String,
        caption: String,
    },
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Doc {
    pub title: String,
    pub blocks: Vec<Block>,
}

impl Doc {
    /// Markdown; figure `NAME` links to `NAME.svg` next to the report.
    pub fn to_markdown(&self) -> String {
        let mut out = format!("# {}\n", self.title);
        for b in &self.blocks {
            out.push('\n');
            match b {
                Block::Heading(level, t) => {
                    out.push_str(&format!("{} {t}\n", "#".repeat(*level as usize)))
                }
                Block::Para(t) => out.push_str(&format!("{t}\n")),
                Block::Quote(t) => out.extend(t.lines().map(|line| format!("> {line}\n"))),
                Block::List(items) => out.extend(items.iter().map(|i| format!("- {i}\n"))),
                Block::Table(head, rows) => {
                    let cell = |c: &String| c.replace('|', "\\|").replace('\n', " ");
                    let row = |cells: &[String]| {
                        format!("| {} |\n", cells.iter().map(cell).collect::<Vec<_>>().join(" | "))
                    };
                    out.push_str(&row(head));
                    out.push_str(&format!("|{}\n", "---|".repeat(head.len())));
                    for r in rows {
                        out.push_str(&row(r));
                    }
                }
                Block::Code { lang, text } => {
                    out.push_str(&format!("```{lang}\n{}\n```\n", text.trim_end()));
                }
                Block::Figure { name, title, caption } => {
                    out.push_str(&format!("![{title}]({name}.svg)\n\n{caption}\n"));
                }
            }
        }
        out
    }

    /// A standalone HTML page; `image(name)` gives the figure's PNG bytes.
    pub fn to_html(&self, mut image: impl FnMut(&str) -> Option<Vec<u8>>) -> String {
        use base64::Engine;
        let mut out = String::from(HEAD);
        out.push_str(&format!(
            "<title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
            escape(&self.title)
        ));
        out.push_str(&format!("<h1>{}</h1>\n", inline(&self.title)));
        for b in &self.blocks {
            match b {
                Block::Heading(level, t) => {
                    out.push_str(&format!("<h{level}>{}</h{level}>\n", inline(t)))
                }
                Block::Para(t) => out.push_str(&format!("<p>{}</p>\n", inline(t))),
                Block::Quote(t) => {
                    out.push_str(&format!("<blockquote>{}</blockquote>\n", inline(t)))
                }
                Block::List(items) => {
                    let li: String =
                        items.iter().map(|i| format!("<li>{}</li>", inline(i))).collect();
                    out.push_str(&format!("<ul>{li}</ul>\n"));
                }
                Block::Table(head, rows) => {
                    let th: String =
                        head.iter().map(|h| format!("<th>{}</th>", inline(h))).collect();
                    out.push_str(&format!("<table>\n<thead><tr>{th}</tr></thead>\n<tbody>\n"));
                    for r in rows {
                        let cells: String = r.iter().map(|c| td(c)).collect();
                        out.push_str(&format!("<tr>{cells}</tr>\n"));
                    }
                    out.push_str("</tbody>\n</table>\n");
                }
                Block::Code { lang, text } => {
                    out.push_str(&format!(
                        "<pre><code class=\"language-{lang}\">{}</code></pre>\n",
                        escape(text.trim_end())
                    ));
                }
                Block::Figure { name, title, caption } => {
                    out.push_str("<figure>\n");
                    if let Some(png) = image(name) {
                        let b64 = base64::engine::general_purpose::STANDARD.encode(png);
                        out.push_str(&format!(
                            "<img alt=\"{}\" width=\"1200\" height=\"750\" src=\"data:image/png;base64,{b64}\">\n",
                            escape(title)
                        ));
                    }
                    out.push_str(&format!(
                        "<figcaption>{}</figcaption>\n</figure>\n",
                        inline(caption)
                    ));
                }
            }
        }
        out.push_str("</body>\n</html>\n");
        out
    }
}

const HEAD: &str = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";

const CSS: &str =
    "body{font-family:'DejaVu Sans',Verdana,sans-serif;max-width:1240px;margin:2em auto;\
padding:0 1em;color:#222;line-height:1.45}\
table{border-collapse:collapse;margin:1em 0;font-size:.92em}\
th,td{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}\
td.n{text-align:right;white-space:nowrap}thead{background:#f3f3f3}\
pre{background:#f6f6f6;padding:1em;overflow:auto;max-height:30em}\
code{font-family:'DejaVu Sans Mono',monospace;font-size:.92em}\
blockquote{border-left:4px solid #999;margin:1em 0;padding:.2em 1em;color:#333}\
figure{margin:2em 0}img{max-width:100%;height:auto;border:1px solid #ddd}\
figcaption{font-style:italic;margin-top:.4em}";

/// A table cell: numbers (and "–") right-aligned, words left.
fn td(c: &str) -> String {
    let numeric = c.starts_with(|ch: char| ch.is_ascii_digit() || "+-–$".contains(ch));
    let class = if numeric { " class=\"n\"" } else { "" };
    format!("<td{class}>{}</td>", inline(c))
}

/// HTML-escape text.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Escape, then turn `code` spans into `<code>`.
fn inline(s: &str) -> String {
    let parts: Vec<&str> = s.split('`').collect();
    if parts.len().is_multiple_of(2) {
        return escape(s); // unbalanced backticks: no spans
    }
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| if i % 2 == 1 { format!("<code>{}</code>", escape(p)) } else { escape(p) })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_spans_and_escaping() {
        assert_eq!(inline("a `<b>` & c"), "a <code>&lt;b&gt;</code> &amp; c");
        assert_eq!(inline("odd ` tick"), "odd ` tick");
    }
}

//! Markdown as `explain` writes it, rendered for reading in a terminal: headings underlined,
//! paragraphs and list items wrapped to the width, code blocks indented and never wrapped (a
//! kubectl transcript keeps its lines), `**bold**` in bold when styles are on. Only the subset
//! the rule catalogue produces is understood (ATX headings, paragraphs, `- ` items, fenced code,
//! `|` table rows passed through); anything else is kept as text, so nothing is ever dropped.

/// How to render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    /// Columns to wrap prose at.
    pub width: usize,
    /// ANSI bold for headings and `**bold**`; off for pipes, files and `NO_COLOR`.
    pub ansi: bool,
}

const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";
/// Code blocks sit this far in.
const CODE_INDENT: &str = "    ";

/// Renders `markdown` as text for a terminal.
pub fn render(markdown: &str, style: Style) -> String {
    let width = style.width.max(20);
    let mut out = String::new();
    let mut paragraph: Vec<&str> = Vec::new();
    let mut in_code = false;
    let flush = |paragraph: &mut Vec<&str>, out: &mut String| {
        if paragraph.is_empty() {
            return;
        }
        let text = paragraph.join(" ");
        paragraph.clear();
        if let Some(item) = text.strip_prefix("- ") {
            wrap_into(out, &inline(item, style.ansi), width, "  • ", "    ");
        } else {
            wrap_into(out, &inline(&text, style.ansi), width, "", "");
        }
    };
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            flush(&mut paragraph, &mut out);
            in_code = !in_code;
            continue;
        }
        if in_code {
            if line.is_empty() {
                out.push('\n');
            } else {
                out.push_str(CODE_INDENT);
                out.push_str(line);
                out.push('\n');
            }
            continue;
        }
        if line.trim().is_empty() {
            flush(&mut paragraph, &mut out);
            if !out.is_empty() && !out.ends_with("\n\n") {
                out.push('\n');
            }
            continue;
        }
        if let Some(title) = heading(line) {
            flush(&mut paragraph, &mut out);
            let title = inline(title, false);
            let rule = "=".repeat(title.chars().count());
            if style.ansi {
                out.push_str(&format!("{BOLD}{title}{RESET}\n{rule}\n"));
            } else {
                out.push_str(&format!("{title}\n{rule}\n"));
            }
            continue;
        }
        if line.starts_with('|') {
            flush(&mut paragraph, &mut out);
            out.push_str(line);
            out.push('\n');
            continue;
        }
        if line.starts_with("- ") {
            // Each item is its own paragraph.
            flush(&mut paragraph, &mut out);
        }
        paragraph.push(line.trim());
    }
    flush(&mut paragraph, &mut out);
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

fn heading(line: &str) -> Option<&str> {
    let hashes = line.chars().take_while(|&c| c == '#').count();
    (1..=6)
        .contains(&hashes)
        .then(|| line[hashes..].strip_prefix(' '))
        .flatten()
        .map(str::trim)
}

/// `**bold**` to bold (or to plain text); code spans keep their backticks, which a reader of
/// plain text still recognises.
fn inline(text: &str, ansi: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("**") {
        let Some(len) = rest[start + 2..].find("**") else {
            break;
        };
        out.push_str(&rest[..start]);
        let inner = &rest[start + 2..start + 2 + len];
        if ansi {
            out.push_str(BOLD);
            out.push_str(inner);
            out.push_str(RESET);
        } else {
            out.push_str(inner);
        }
        rest = &rest[start + 2 + len + 2..];
    }
    out.push_str(rest);
    out
}

/// Columns a string takes, ANSI sequences not counted.
fn visible_width(s: &str) -> usize {
    let mut n = 0;
    let mut in_escape = false;
    for c in s.chars() {
        match (in_escape, c) {
            (false, '\x1b') => in_escape = true,
            (true, 'm') => in_escape = false,
            (true, _) => {}
            (false, _) => n += 1,
        }
    }
    n
}

/// Greedy word wrap: `first` before the first line, `rest` before the others. A word longer
/// than a line gets a line of its own rather than being cut.
fn wrap_into(out: &mut String, text: &str, width: usize, first: &str, rest: &str) {
    let mut line = String::from(first);
    let mut used = visible_width(first);
    let mut empty = true;
    for word in text.split_whitespace() {
        let w = visible_width(word);
        if !empty && used + 1 + w > width {
            out.push_str(&line);
            out.push('\n');
            line = String::from(rest);
            used = visible_width(rest);
            empty = true;
        }
        if !empty {
            line.push(' ');
            used += 1;
        }
        line.push_str(word);
        used += w;
        empty = false;
    }
    if !empty {
        out.push_str(&line);
        out.push('\n');
    }
}

/// The width to wrap at: `COLUMNS` when the shell exports it, else 80; at most 100 (long lines
/// read badly on wide terminals). The library forbids `unsafe`, so the terminal is not asked.
pub fn terminal_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0)
        .unwrap_or(80)
        .min(100)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: Style = Style {
        width: 40,
        ansi: false,
    };

    #[test]
    fn headings_lists_paragraphs_and_code() {
        let md = "## P10\n\nWhat the pool can hand out shares no address with any other pool of any kind.\n\n- **Effect:** deny\n- **Kinds:** every pool kind, in every namespace there is\n\nExample:\n\n```console\n$ kubectl create -f shared.yaml\nThe GlobalInClusterIPPool \"shared\" is invalid: spec.addresses[0]: overlaps [ipam-guard P10]\n```\n";
        let text = render(md, PLAIN);
        assert_eq!(
            text,
            "\
P10
===

What the pool can hand out shares no
address with any other pool of any kind.

  • Effect: deny
  • Kinds: every pool kind, in every
    namespace there is

Example:

    $ kubectl create -f shared.yaml
    The GlobalInClusterIPPool \"shared\" is invalid: spec.addresses[0]: overlaps [ipam-guard P10]
"
        );
    }

    #[test]
    fn ansi_bold_is_not_counted_in_the_width() {
        // 26 columns on the first line; counting the 8 bytes of escapes would make it 34.
        let text = render(
            "- **Effect:** deny deny deny deny deny deny deny",
            Style {
                width: 30,
                ansi: true,
            },
        );
        assert_eq!(
            text,
            "  • \x1b[1mEffect:\x1b[0m deny deny deny\n    deny deny deny deny\n"
        );
        assert!(render(
            "## X1",
            Style {
                width: 30,
                ansi: true
            }
        )
        .starts_with("\x1b[1mX1\x1b[0m\n==\n"));
    }

    #[test]
    fn a_word_longer_than_the_line_stands_alone_and_nothing_is_lost() {
        let long = "x".repeat(50);
        assert_eq!(
            render(&format!("a {long} b"), PLAIN),
            format!("a\n{long}\nb\n")
        );
        // Unknown markup is kept as text; an unclosed `**` too.
        assert_eq!(render("> quoted **half", PLAIN), "> quoted **half\n");
    }
}

//! Where a field is written: the line of `spec.addresses[1]` in a YAML document, so a finding
//! points at the field rather than at the document (editors, `file:line:`, SARIF regions).
//!
//! Read from the text by indentation, the way block YAML (and `kubectl get -o json`'s pretty
//! JSON) lays objects out. A path the text does not show plainly (flow style, anchors, a key
//! spelt otherwise) resolves to the deepest part that was found, never to a guess: the first
//! segment not found leaves the caller with the document's line.

/// The 1-based line of `field` (as `field.Path` writes it: `spec.addresses[1]`,
/// `metadata.labels[cluster.x-k8s.io/cluster-name]`) in the document of `text` that starts on
/// line `start`; None when not even its first segment is found.
pub fn field_line(text: &str, start: usize, field: &str) -> Option<usize> {
    let lines: Vec<&str> = text
        .lines()
        .skip(start.checked_sub(1)?)
        .take_while(|l| !(l.starts_with("---") || l.starts_with("...")))
        .collect();
    // A JSON document's keys are inside its opening brace.
    let open = lines.iter().position(|l| !is_blank(l));
    let from = match open {
        Some(i) if lines[i].trim() == "{" => i + 1,
        _ => 0,
    };
    let mut region = from..lines.len();
    let mut found = None;
    for seg in segments(field) {
        let at = match &seg {
            Seg::Key(k) => find_key(&lines, region.clone(), k),
            Seg::Index(i) => find_item(&lines, region.clone(), *i),
        };
        let Some((line, next)) = at else { break };
        found = Some(start + line);
        match next {
            Some(r) => region = r,
            None => break,
        }
    }
    found
}

#[derive(Debug, PartialEq, Eq)]
enum Seg {
    Key(String),
    Index(usize),
}

fn segments(field: &str) -> Vec<Seg> {
    let mut out = Vec::new();
    let mut key = String::new();
    let mut chars = field.chars();
    let flush = |key: &mut String, out: &mut Vec<Seg>| {
        if !key.is_empty() {
            out.push(Seg::Key(std::mem::take(key)));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '.' => flush(&mut key, &mut out),
            '[' => {
                flush(&mut key, &mut out);
                let inner: String = chars.by_ref().take_while(|c| *c != ']').collect();
                match inner.parse::<usize>() {
                    Ok(i) => out.push(Seg::Index(i)),
                    Err(_) => out.push(Seg::Key(inner)),
                }
            }
            c => key.push(c),
        }
    }
    flush(&mut key, &mut out);
    out
}

fn is_blank(line: &str) -> bool {
    let t = line.trim_start();
    t.is_empty() || t.starts_with('#')
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// A line's content after any list dashes (`- - key: v`), and the column where that content
/// starts.
fn content(line: &str) -> (usize, &str) {
    let mut col = indent(line);
    let mut rest = &line[col..];
    while let Some(after) = rest.strip_prefix('-') {
        if !(after.is_empty() || after.starts_with(' ')) {
            break;
        }
        let spaces = after.len() - after.trim_start_matches(' ').len();
        col += 1 + spaces;
        rest = &after[spaces..];
    }
    (col, rest)
}

/// The value text after `key:` on a line whose content is `key: value` (quoted keys too).
fn after_key<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let rest = [("\"", "\""), ("'", "'"), ("", "")]
        .iter()
        .find_map(|(open, close)| {
            text.strip_prefix(open)?
                .strip_prefix(key)?
                .strip_prefix(close)?
                .strip_prefix(':')
        })?;
    (rest.is_empty() || rest.starts_with([' ', '\t'])).then_some(rest)
}

type Found = (usize, Option<std::ops::Range<usize>>);

/// `key` among the mapping entries of `region` (all at the indentation of its first entry): its
/// line, and the region of its value when that is written below it.
fn find_key(lines: &[&str], region: std::ops::Range<usize>, key: &str) -> Option<Found> {
    let first = region.clone().find(|i| !is_blank(lines[*i]))?;
    let (col, _) = content(lines[first]);
    for i in region.clone() {
        if is_blank(lines[i]) {
            continue;
        }
        let (c, text) = content(lines[i]);
        // A dash line at the entries' column starts another item of an enclosing list.
        // Past the first entry (a list item's dash line may sit left of its keys), anything
        // left of the entries ends the mapping.
        if i != first && indent(lines[i]) < col {
            return None;
        }
        if c != col {
            continue;
        }
        if let Some(value) = after_key(text, key) {
            let value = value.trim();
            // Pretty JSON opens the value at the end of the key's line.
            let below = value.is_empty()
                || value.starts_with('#')
                || value.starts_with(['|', '>', '&', '!'])
                || matches!(value.trim_end_matches(','), "{" | "[");
            let next = below.then(|| {
                let end = (i + 1..region.end)
                    .find(|j| {
                        !is_blank(lines[*j])
                            && (indent(lines[*j]) < col
                                || (indent(lines[*j]) == col
                                    && !content(lines[*j]).1.is_empty()
                                    && !lines[*j][col..].starts_with('-')))
                    })
                    .unwrap_or(region.end);
                i + 1..end
            });
            return Some((i, next));
        }
    }
    None
}

/// Item `index` of the block sequence in `region`: its line, and its region (its dash line
/// included, so its first key is found there).
fn find_item(lines: &[&str], region: std::ops::Range<usize>, index: usize) -> Option<Found> {
    let first = region.clone().find(|i| !is_blank(lines[*i]))?;
    let col = indent(lines[first]);
    let is_dash = |i: usize| {
        indent(lines[i]) == col && {
            let t = &lines[i][col..];
            t.starts_with("- ") || t == "-"
        }
    };
    if !is_dash(first) {
        return None;
    }
    let items: Vec<usize> = region
        .clone()
        .filter(|i| !is_blank(lines[*i]))
        .take_while(|i| indent(lines[*i]) >= col)
        .filter(|i| is_dash(*i))
        .collect();
    let at = *items.get(index)?;
    let end = items.get(index + 1).copied().unwrap_or_else(|| {
        (at + 1..region.end)
            .find(|j| !is_blank(lines[*j]) && indent(lines[*j]) < col)
            .unwrap_or(region.end)
    });
    Some((at, Some(at..end)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "\
# a comment
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterIPPool
metadata:
  name: nodes
  labels:
    cluster.x-k8s.io/cluster-name: a
spec:
  addresses:
  - 10.0.0.1-10.0.0.9

  - 10.0.0.20
  gateway: 10.0.0.1
  refs:
    - name: x
      kind: K
    - kind: L
      name: y
  inline: [a, b]
---
spec:
  gateway: other
";

    #[test]
    fn fields_are_found_at_their_lines() {
        let at = |f: &str| field_line(DOC, 2, f);
        assert_eq!(at("metadata.name"), Some(5));
        assert_eq!(
            at("metadata.labels[cluster.x-k8s.io/cluster-name]"),
            Some(7)
        );
        assert_eq!(at("spec.addresses[0]"), Some(10));
        assert_eq!(at("spec.addresses[1]"), Some(12));
        assert_eq!(at("spec.addresses"), Some(9));
        assert_eq!(at("spec.gateway"), Some(13));
        assert_eq!(at("spec.refs[0].kind"), Some(16));
        assert_eq!(at("spec.refs[1].name"), Some(18));
        assert_eq!(at("spec.refs[1]"), Some(17));
        // Flow style and missing parts: the deepest part found.
        assert_eq!(at("spec.inline[1]"), Some(19));
        assert_eq!(at("spec.addresses[5]"), Some(9));
        assert_eq!(at("spec.prefix"), Some(8));
        assert_eq!(at("status.x"), None);
        // The next document is not this one's.
        assert_eq!(field_line(DOC, 21, "spec.gateway"), Some(22));
    }

    #[test]
    fn pretty_json_keys_are_found() {
        let json = "{\n  \"metadata\": {\n    \"name\": \"a\"\n  },\n  \"spec\": {\n    \"gateway\": \"x\"\n  }\n}\n";
        assert_eq!(field_line(json, 1, "spec.gateway"), Some(6));
        assert_eq!(field_line(json, 1, "metadata.name"), Some(3));
    }

    #[test]
    fn paths_split_into_keys_and_indexes() {
        assert_eq!(
            segments("a.b[2][x.y/z].c"),
            vec![
                Seg::Key("a".into()),
                Seg::Key("b".into()),
                Seg::Index(2),
                Seg::Key("x.y/z".into()),
                Seg::Key("c".into()),
            ]
        );
    }
}

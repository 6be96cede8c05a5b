//! `explain` for a terminal (`--output text`) beside its Markdown (`--output markdown`, and what
//! a pipe gets by default, which keeps docs/rules.md and tests/rules_doc.rs as they are), and
//! `completions`: the bash script loaded into a real bash completes subcommands and their flags.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

use clap::CommandFactory;
use ipam_guard::catalogue;
use ipam_guard::cli::explain;
use ipam_guard::cli::terminal::{render, Style};

fn ipam_guard(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ipam-guard"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR")).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run ipam-guard")
}

fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// The lines of the fenced blocks of `markdown`.
fn code_lines(markdown: &str) -> BTreeSet<String> {
    let mut inside = false;
    let mut out = BTreeSet::new();
    for line in markdown.lines() {
        if line.starts_with("```") {
            inside = !inside;
        } else if inside {
            out.insert(line.to_string());
        }
    }
    out
}

/// The words of the Markdown, markup aside, in order.
fn words(markdown: &str) -> Vec<String> {
    markdown
        .lines()
        .filter(|l| !l.starts_with("```"))
        .flat_map(|l| l.split_whitespace())
        .map(|w| w.replace("**", ""))
        .filter(|w| !w.is_empty() && !w.chars().all(|c| c == '#' || c == '-'))
        .collect()
}

/// What a reader of the text form must get from any entry: no Markdown fences or `#` headings,
/// the heading underlined, prose within `width` (code lines kept whole, indented), and every
/// word of the Markdown in the same order.
fn check_rendered(markdown: &str, text: &str, width: usize) {
    let code = code_lines(markdown);
    assert!(!text.contains("```"), "{text}");
    assert!(!text.contains('\x1b'), "no styles when not on a terminal");
    let mut lines = text.lines();
    let title = lines.next().unwrap();
    assert_eq!(
        lines.next().unwrap(),
        "=".repeat(title.chars().count()),
        "{text}"
    );
    for line in text.lines() {
        assert!(!line.starts_with("## "), "{line}");
        let is_code = line.strip_prefix("    ").is_some_and(|l| code.contains(l));
        assert!(
            is_code || line.chars().count() <= width,
            "{} columns, over {width}: {line:?}",
            line.chars().count()
        );
    }
    // Every line but the title's underline: prose may hold a lone `=` ("free = allocatable").
    let shown: Vec<String> = text
        .lines()
        .enumerate()
        .filter(|(i, _)| *i != 1)
        .flat_map(|(_, l)| l.split_whitespace())
        .filter(|w| *w != "•")
        .map(str::to_string)
        .collect();
    let mut at = 0;
    for w in words(markdown) {
        match shown[at..].iter().position(|s| *s == w) {
            Some(i) => at += i + 1,
            None => panic!("{w:?} missing (or out of order) in:\n{text}"),
        }
    }
}

#[test]
fn every_entry_renders_for_a_terminal_without_losing_a_word() {
    let plain = Style {
        width: 72,
        ansi: false,
    };
    for rule in catalogue::RULES {
        let md = explain::entry(rule);
        check_rendered(&md, &render(&md, plain), 72);
    }
    for p in catalogue::PRINCIPLES {
        let md = explain::principle_entry(p);
        check_rendered(&md, &render(&md, plain), 72);
    }
}

#[test]
fn explain_text_markdown_and_the_default_through_a_pipe() {
    let entry = explain::entry(catalogue::rule("P10").unwrap());
    // A pipe gets Markdown unless asked otherwise: docs/rules.md is made that way.
    assert_eq!(stdout(&ipam_guard(&["explain", "P10"], &[])), entry);
    assert_eq!(
        stdout(&ipam_guard(
            &["explain", "P10", "--output", "markdown"],
            &[]
        )),
        entry
    );
    let text = stdout(&ipam_guard(
        &["explain", "P10", "-o", "text"],
        &[("COLUMNS", "60")],
    ));
    check_rendered(&entry, &text, 60);
    assert!(text.starts_with("P10\n===\n\n"), "{text}");
    assert!(text.contains("\n  • Effect: deny\n"), "{text}");
    assert!(
        text.contains("\n    $ kubectl create -f shared.yaml\n"),
        "the transcript is a code block: {text}"
    );
    // --all is the committed page through a pipe.
    let page = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/rules.md"))
        .unwrap();
    assert_eq!(stdout(&ipam_guard(&["explain", "--all"], &[])), page);
}

fn subcommands() -> Vec<String> {
    ipam_guard::cli::Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect()
}

#[test]
fn completion_scripts_name_every_subcommand() {
    let names = subcommands();
    assert!(
        names.contains(&"completions".to_string()) && names.len() >= 8,
        "{names:?}"
    );
    for shell in ["bash", "zsh", "fish"] {
        let script = stdout(&ipam_guard(&["completions", shell], &[]));
        for name in &names {
            assert!(script.contains(name.as_str()), "{shell}: no {name}");
        }
        // Flags of subcommands too.
        for flag in ["free", "kubeconfig", "audit-interval", "output"] {
            assert!(script.contains(flag), "{shell}: no --{flag}");
        }
    }
    let o = ipam_guard(&["completions", "tcsh"], &[]);
    assert_eq!(o.status.code(), Some(2));
}

/// Completes `words` (the last one being typed) as bash would on TAB, with the script loaded.
fn complete(script: &Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len() - 1;
    let program = format!(
        // The function the script registers with `complete -F` for ipam-guard.
        "source '{}'\nCOMP_WORDS=({})\nCOMP_CWORD={cword}\n\
         fn=$(complete -p ipam-guard | sed -E 's/.* -F ([^ ]+) .*/\\1/')\n\
         \"$fn\" ipam-guard '{}' '{}'\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        script.display(),
        quoted.join(" "),
        words[cword],
        words[cword - 1],
    );
    let o = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program])
        .output()
        .expect("bash runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_subcommands_and_their_flags() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("ipam-guard.bash");
    std::fs::write(&script, stdout(&ipam_guard(&["completions", "bash"], &[]))).unwrap();
    assert_eq!(complete(&script, &["ipam-guard", "us"]), ["usage"]);
    let all = complete(&script, &["ipam-guard", ""]);
    for name in subcommands() {
        assert!(all.contains(&name), "{name} not offered: {all:?}");
    }
    // After a subcommand, its own flags (this is what clap-rs/clap#6421 breaks).
    assert_eq!(
        complete(&script, &["ipam-guard", "usage", "--fr"]),
        ["--free"]
    );
    assert_eq!(
        complete(&script, &["ipam-guard", "completions", ""]),
        ["-h", "--help", "bash", "zsh", "fish"]
    );
    assert!(
        complete(&script, &["ipam-guard", "explain", "--out"]).contains(&"--output".to_string())
    );
}

/// `explain` with its standard output on a pseudo-terminal (util-linux `script`, in Debian's
/// essential bsdutils): rendered by default, bold unless NO_COLOR.
#[test]
fn explain_on_a_terminal_is_rendered_by_default() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("SKIPPED explain_on_a_terminal_is_rendered_by_default: no `script` (util-linux)");
        return;
    }
    let on_a_terminal = |no_color: bool| -> String {
        let mut cmd = Command::new("script");
        cmd.args([
            "-qec",
            &format!("{} explain X1", env!("CARGO_BIN_EXE_ipam-guard")),
            "/dev/null",
        ])
        .env("COLUMNS", "50")
        .env_remove("NO_COLOR");
        if no_color {
            cmd.env("NO_COLOR", "1");
        }
        let o = cmd.output().expect("script runs");
        assert!(o.status.success(), "{o:?}");
        // The terminal turns each newline into CR LF.
        String::from_utf8(o.stdout).unwrap().replace("\r\n", "\n")
    };
    let styled = on_a_terminal(false);
    assert!(styled.starts_with("\x1b[1mX1\x1b[0m\n==\n\n"), "{styled:?}");
    let plain = on_a_terminal(true);
    let entry = explain::principle_entry(catalogue::principle("X1").unwrap());
    assert_eq!(
        plain,
        render(
            &entry,
            Style {
                width: 50,
                ansi: false
            }
        )
    );
    check_rendered(&entry, &plain, 50);
}

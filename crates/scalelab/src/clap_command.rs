//! The one clap definition of the CLI every user of it shares ([`command`]: parsing,
//! completions, the man page), with the help's text ([`crate::help_text`]) as written.
//!
//! `{n}` (a command's task count) is shown literally: clap reads `{n}` in help text as a line
//! break, so [`command`] puts an invisible ANSI reset inside each one (`{` ESC`[0m` `n}`), which
//! a terminal shows as `{n}` and clap strips when it writes plain text (a pipe, completions,
//! the man page).

use clap::builder::StyledStr;
use clap::{Command, CommandFactory};

use crate::arguments::Cli;

/// The one clap definition of the CLI, with every `{n}` kept as written.
pub fn command() -> Command {
    keep_braces(Cli::command())
}

/// `{n}` → `{` ESC`[0m` `n}` in every text clap shows, through every subcommand.
fn keep_braces(cmd: Command) -> Command {
    let mut cmd = cmd.mut_args(|mut arg| {
        if let Some(help) = arg.get_help().and_then(escaped) {
            arg = arg.help(help);
        }
        if let Some(long) = arg.get_long_help().and_then(escaped) {
            arg = arg.long_help(long);
        }
        arg
    });
    if let Some(text) = cmd.get_about().and_then(escaped) {
        cmd = cmd.about(text);
    }
    if let Some(text) = cmd.get_long_about().and_then(escaped) {
        cmd = cmd.long_about(text);
    }
    if let Some(text) = cmd.get_after_help().and_then(escaped) {
        cmd = cmd.after_help(text);
    }
    if let Some(text) = cmd.get_after_long_help().and_then(escaped) {
        cmd = cmd.after_long_help(text);
    }
    cmd.mut_subcommands(keep_braces)
}

/// The text with each `{n}` guarded, or `None` when it has none.
fn escaped(text: &StyledStr) -> Option<String> {
    let raw = text.ansi().to_string();
    raw.contains("{n}")
        .then(|| raw.replace("{n}", "{\x1b[0mn}"))
}

#[cfg(test)]
mod tests {
    use clap::FromArgMatches;

    use super::*;

    /// A word, or one of the shell's operators (`;`, `|`, `&`, `(`, `)`, `<`, `>`, `$`).
    #[derive(Debug, PartialEq)]
    enum Token {
        Word(String),
        Op(char),
    }

    /// A shell line as words (quotes removed) and operators, up to a `#` comment.
    fn tokens(line: &str) -> Vec<Token> {
        let mut out = Vec::new();
        let mut word: Option<String> = None;
        let mut quote: Option<char> = None;
        for c in line.chars() {
            if let Some(q) = quote {
                if c == q {
                    quote = None;
                } else {
                    word.get_or_insert_default().push(c);
                }
                continue;
            }
            match c {
                '\'' | '"' => {
                    quote = Some(c);
                    word.get_or_insert_default();
                }
                '#' if word.is_none() => break,
                ';' | '|' | '&' | '(' | ')' | '<' | '>' | '$' => {
                    out.extend(word.take().map(Token::Word));
                    out.push(Token::Op(c));
                }
                c if c.is_whitespace() => out.extend(word.take().map(Token::Word)),
                c => word.get_or_insert_default().push(c),
            }
        }
        assert!(quote.is_none(), "unclosed quote in {line}");
        out.extend(word.map(Token::Word));
        out
    }

    /// The arguments of every `scalelab …` command in a shell line (and of `cargo run -p
    /// scalelab -- …`), without redirections.
    fn scalelab_commands(line: &str) -> Vec<Vec<String>> {
        let mut commands = Vec::new();
        let mut current: Vec<String> = Vec::new();
        let mut redirect = false;
        for token in tokens(line).into_iter().chain([Token::Op(';')]) {
            match token {
                Token::Op(op) => {
                    redirect = matches!(op, '<' | '>');
                    if !redirect && !current.is_empty() {
                        commands.push(std::mem::take(&mut current));
                    }
                }
                Token::Word(_) if redirect => redirect = false,
                Token::Word(w) => current.push(w),
            }
        }
        commands
            .into_iter()
            .filter_map(|words| match words.first().map(String::as_str) {
                Some("scalelab") => Some(words),
                Some("cargo") => {
                    let rest = words.iter().position(|w| w == "--")?;
                    Some(
                        std::iter::once("scalelab".to_string())
                            .chain(words[rest + 1..].iter().cloned())
                            .collect(),
                    )
                }
                _ => None,
            })
            .collect()
    }

    /// Each command of an EXAMPLES block, continuation lines (` \`) joined.
    fn examples(text: &str) -> Vec<String> {
        let mut lines = Vec::new();
        let mut pending = String::new();
        for line in text
            .lines()
            .skip_while(|l| l.trim() != "EXAMPLES:")
            .skip(1)
            .take_while(|l| !l.trim().is_empty())
        {
            match line.trim().strip_suffix('\\') {
                Some(head) => pending.push_str(head),
                None => lines.push(std::mem::take(&mut pending) + line.trim()),
            }
        }
        assert!(pending.is_empty(), "a continuation ends the block: {text}");
        lines
    }

    /// The README and every page of `docs/`, by name: what a user reads beside `--help`.
    fn documents() -> Vec<(String, String)> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut pages = vec![root.join("README.md")];
        let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
            .expect("the docs/ folder")
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        docs.sort();
        assert!(docs.len() >= 10, "the reference pages: {docs:?}");
        pages.extend(docs);
        pages
            .into_iter()
            .map(|p| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read_to_string(&p).unwrap())
            })
            .collect()
    }

    /// Every `scalelab` command line in a document's code blocks, continuation lines (` \`)
    /// joined.
    fn document_lines(readme: &str) -> Vec<String> {
        let mut in_block = false;
        let mut lines = Vec::new();
        let mut pending: Option<String> = None;
        for line in readme.lines() {
            if line.starts_with("```") {
                in_block = !in_block;
                assert!(pending.is_none(), "a continuation ends a code block");
            } else if in_block {
                let line = line.strip_prefix("$ ").unwrap_or(line);
                let line = match pending.take() {
                    Some(head) => head + line.trim_start(),
                    None if line.starts_with("scalelab ") || line.contains("-p scalelab -- ") => {
                        line.to_string()
                    }
                    None => continue,
                };
                match line.strip_suffix('\\') {
                    Some(head) => pending = Some(head.to_string()),
                    None => lines.push(line),
                }
            }
        }
        lines
    }

    /// Every subcommand (and the top command), with its path of names.
    fn all_commands(cmd: &Command, path: &str, out: &mut Vec<(String, Command)>) {
        out.push((path.to_string(), cmd.clone()));
        for sub in cmd.get_subcommands() {
            all_commands(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }

    fn parses(words: &[String]) -> Result<Cli, String> {
        command()
            .try_get_matches_from(words)
            .and_then(|m| Cli::from_arg_matches(&m))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn every_example_in_the_help_the_readme_and_the_docs_parses() {
        let mut commands = Vec::new();
        let mut all = Vec::new();
        all_commands(&command(), "scalelab", &mut all);
        let mut pages = 0;
        for (path, cmd) in &all {
            let Some(after) = cmd.get_after_help() else {
                continue;
            };
            let lines = examples(&after.to_string());
            assert!(!lines.is_empty(), "{path}: an after_help without EXAMPLES");
            pages += 1;
            for line in lines {
                let found = scalelab_commands(&line);
                assert!(!found.is_empty(), "{path}: no scalelab command in `{line}`");
                commands.extend(found.into_iter().map(|c| (path.clone(), line.clone(), c)));
            }
        }
        assert!(pages >= 14, "only {pages} pages with examples");
        let mut documented = 0;
        for (name, text) in documents() {
            for line in document_lines(&text) {
                let found = scalelab_commands(&line);
                assert!(!found.is_empty(), "{name}: no scalelab command in `{line}`");
                documented += 1;
                commands.extend(found.into_iter().map(|c| (name.clone(), line.clone(), c)));
            }
        }
        assert!(
            documented >= 25,
            "only {documented} command lines in the README and docs/"
        );
        for (place, line, words) in &commands {
            if let Err(e) = parses(words) {
                panic!("{place}: `{line}` does not parse ({words:?}):\n{e}");
            }
        }
    }

    #[test]
    fn the_example_extractor_reads_shell_lines() {
        let words = |c: &[&str]| c.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        assert_eq!(
            scalelab_commands("scalelab ls ; scalelab show 3 --json > x.json # note"),
            [
                words(&["scalelab", "ls"]),
                words(&["scalelab", "show", "3", "--json"])
            ]
        );
        assert_eq!(
            scalelab_commands("read a b < <(scalelab ab --a 'x {n}' --b \"y z\" -q)"),
            [words(&[
                "scalelab", "ab", "--a", "x {n}", "--b", "y z", "-q"
            ])]
        );
        assert_eq!(
            scalelab_commands("cargo run -p scalelab -- run spin --step md5='a {} +'"),
            [words(&["scalelab", "run", "spin", "--step", "md5=a {} +"])]
        );
        assert!(parses(&words(&["scalelab", "run", "--no-such-flag"])).is_err());
    }

    #[test]
    fn example_lines_fit_80_columns() {
        let mut all = Vec::new();
        all_commands(&command(), "scalelab", &mut all);
        for (path, cmd) in &all {
            for line in cmd
                .get_after_help()
                .map(|t| t.to_string())
                .unwrap_or_default()
                .lines()
            {
                assert!(line.chars().count() <= 78, "{path}: {line}");
            }
        }
    }

    #[test]
    fn every_argument_has_a_description() {
        let mut all = Vec::new();
        all_commands(&command(), "scalelab", &mut all);
        for (path, cmd) in &all {
            if cmd.is_hide_set() {
                continue;
            }
            for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
                assert!(
                    arg.get_help().is_some(),
                    "`{path}` {} has no description",
                    arg.get_id()
                );
            }
        }
    }

    #[test]
    fn braces_n_survive_into_help_and_plain_text() {
        let mut cmd = command();
        let run = cmd.find_subcommand_mut("run").unwrap().render_long_help();
        let text = run.to_string();
        assert!(text.contains("`{n}` is replaced"), "{text}");
        assert!(text.contains("make -j{n} vmlinux"), "{text}");
        assert!(
            !text.contains('\x1b'),
            "plain text has no escapes: {text:?}"
        );
    }
}

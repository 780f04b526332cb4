//! Slash commands for the chat session (`chat_command`): parsing them, and the text some of
//! them answer with. They need no model, so they work when no provider is live; the owner
//! carries them out.

use stt_llm::registry::{Id, Probed, Status, host};

use crate::session::Turn;

/// One command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slash {
    Providers,
    Provider(Id),
    Models,
    Model(String),
    New,
    System(String),
    Export(Option<String>),
    Help,
}

/// What `/help` says, and what a mistyped command is answered with.
pub const HELP: &str = "\
/providers       every provider: kind, status (live, needs-key, down, not-installed), model
/provider ID      use provider ID from now on (the conversation's context starts over)
/models          the models the provider in use offers
/model NAME      ask for model NAME from now on
/new             a new conversation (the saved one is deleted)
/system TEXT     the system prompt of this conversation
/export [PATH]   write the conversation as Markdown (default: <data dir>/exports/)
/help            this list";

/// `line` as a command; the error says what is wrong and lists the commands.
pub fn parse(line: &str) -> Result<Slash, String> {
    let line = line.trim();
    let Some(body) = line.strip_prefix('/') else {
        return Err(format!("'{line}' is not a command: commands start with /\n{HELP}"));
    };
    let (name, rest) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
    let rest = rest.trim();
    let needs = |what: &str| format!("/{name} needs {what}\n{HELP}");
    match name {
        "providers" => Ok(Slash::Providers),
        "provider" if rest.is_empty() => Err(needs("a provider id (see /providers)")),
        "provider" => Id::parse(rest).map(Slash::Provider).ok_or_else(|| {
            format!("'{rest}' is not a provider stt knows: use one of {}", Id::names())
        }),
        "models" => Ok(Slash::Models),
        "model" if rest.is_empty() => Err(needs("a model name (see /models)")),
        "model" => Ok(Slash::Model(rest.to_owned())),
        "new" => Ok(Slash::New),
        "system" if rest.is_empty() => Err(needs("the prompt's text")),
        "system" => Ok(Slash::System(rest.to_owned())),
        "export" => Ok(Slash::Export((!rest.is_empty()).then(|| rest.to_owned()))),
        "help" => Ok(Slash::Help),
        _ => Err(format!("/{name} is not a command\n{HELP}")),
    }
}

/// The `/providers` table: one line a provider, each opening with a mark (`●` the one in
/// use, `○` one that is there, `·` one that is not), so that no row starts with blanks a
/// viewer's wrapping would eat.
pub fn providers_table(found: &[Probed], active: Option<Id>) -> String {
    let mut lines = vec![format!(
        "  {:<14} {:<6} {:<14} {:<24} {}",
        "provider", "kind", "status", "model", "where"
    )];
    for p in found {
        let mark = match p.status {
            _ if Some(p.id) == active => '●',
            Status::Live => '○',
            _ => '·',
        };
        let status = if p.loading { "loading" } else { p.status.as_str() };
        let place = match p.id.kind() {
            stt_llm::registry::Kind::Cli => p.target.clone(),
            _ => host(&p.target).to_owned(),
        };
        let model = if p.model.is_empty() { "-" } else { &p.model };
        let why = if p.status == Status::Live || p.detail.is_empty() {
            String::new()
        } else {
            format!("  ({})", p.detail)
        };
        lines.push(format!(
            "{mark} {:<14} {:<6} {:<14} {:<24} {place}{why}",
            p.id.as_str(),
            p.id.kind().as_str(),
            status,
            model
        ));
    }
    lines.join("\n")
}

/// The conversation's turns as a Markdown transcript.
pub fn markdown(turns: &[Turn], provider: &str, when: &str) -> String {
    let mut out = format!("# stt conversation\n\n{when} · {provider}\n");
    for turn in turns {
        out.push_str(&format!("\n**You:** {}\n\n", turn.q));
        let stopped = if turn.stopped { " *(stopped)*" } else { "" };
        out.push_str(&format!("**{}:** {}{stopped}\n", turn.provider, turn.a));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_and_mistakes_list_the_commands() {
        let ok = [
            ("/providers", Slash::Providers),
            ("  /provider ollama ", Slash::Provider(Id::Ollama)),
            ("/models", Slash::Models),
            ("/model qwen2.5:7b", Slash::Model("qwen2.5:7b".into())),
            ("/new", Slash::New),
            ("/system Answer in French.", Slash::System("Answer in French.".into())),
            ("/export", Slash::Export(None)),
            ("/export /tmp/x.md", Slash::Export(Some("/tmp/x.md".into()))),
            ("/help", Slash::Help),
        ];
        for (line, expected) in ok {
            assert_eq!(parse(line), Ok(expected), "{line}");
        }
        let bad = [
            ("/provider", "needs a provider id"),
            ("/provider chatgpt", "not a provider stt knows"),
            ("/model", "needs a model name"),
            ("/fly", "/fly is not a command"),
            ("hello", "not a command"),
        ];
        for (line, needle) in bad {
            let err = parse(line).unwrap_err();
            assert!(err.contains(needle), "{line}: {err}");
        }
        assert!(parse("/fly").unwrap_err().contains("/providers"), "lists the commands");
    }

    #[test]
    fn the_table_marks_the_provider_in_use_and_says_why_others_are_not_there() {
        let found = [
            Probed {
                id: Id::Claude,
                status: Status::NotInstalled,
                target: "claude".into(),
                model: String::new(),
                detail: "`claude` is not on PATH".into(),
                loading: false,
            },
            Probed {
                id: Id::LlamaCpp,
                status: Status::Live,
                target: "http://127.0.0.1:9931/v1/chat/completions".into(),
                model: String::new(),
                detail: String::new(),
                loading: false,
            },
        ];
        let table = providers_table(&found, Some(Id::LlamaCpp));
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[1].starts_with("· claude") && lines[1].contains("not-installed"), "{table}");
        assert!(lines[1].contains("not on PATH"), "{table}");
        assert!(
            lines[2].starts_with("● llamacpp") && lines[2].contains("127.0.0.1:9931"),
            "{table}"
        );
    }
}

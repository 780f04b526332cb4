//! [`Words`] on `stt-ctl`'s command line (the `cli` feature): one argument of one or more
//! values, joined with spaces. clap's derive reads a `String` field as one value, so this is
//! the one argument written by hand; every other argument of a verb is derived from the
//! request it sends ([`crate::Request`]).

use clap::{Arg, ArgMatches, Args, Command, FromArgMatches};

use crate::messages::{WORDS, Words};

impl FromArgMatches for Words {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        Self::from_arg_matches_mut(&mut matches.clone())
    }

    fn from_arg_matches_mut(matches: &mut ArgMatches) -> Result<Self, clap::Error> {
        let words: Vec<String> =
            matches.remove_many::<String>(WORDS).map(Iterator::collect).unwrap_or_default();
        Ok(Self(words.join(" ")))
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Args for Words {
    fn augment_args(cmd: Command) -> Command {
        cmd.arg(
            Arg::new(WORDS)
                .required(true)
                .num_args(1..)
                .value_name("TEXT")
                .help("Several words are joined with spaces"),
        )
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::{MemoryRequest, Request, TaskRequest};

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(subcommand)]
        request: Request,
    }

    fn parse(args: &[&str]) -> Request {
        let argv = std::iter::once("stt-ctl").chain(args.iter().copied());
        Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("{args:?}: {e}")).request
    }

    #[test]
    fn the_words_after_a_verb_are_one_text_and_its_flags_stay_flags() {
        assert_eq!(
            parse(&["chat-send", "hello", "there"]),
            Request::ChatSend { text: "hello there".into() }
        );
        assert_eq!(
            parse(&["chat-command", "/system", "-be", "brief"]),
            Request::ChatCommand { line: "/system -be brief".into() }
        );
        assert_eq!(
            parse(&["memory", "search", "blue", "van", "--limit", "3"]),
            Request::Memory(MemoryRequest::Search { text: "blue van".into(), limit: Some(3) })
        );
        assert_eq!(
            parse(&["task", "add", "--due", "2026-12-24", "buy", "a", "tree"]),
            Request::Task(TaskRequest::Add {
                title: "buy a tree".into(),
                goal: None,
                due: Some("2026-12-24".into()),
                priority: None,
            })
        );
    }

    #[test]
    fn a_verb_without_its_words_is_refused() {
        let none = Cli::try_parse_from(["stt-ctl", "chat-send"]).unwrap_err();
        assert_eq!(none.kind(), clap::error::ErrorKind::MissingRequiredArgument);
    }
}

//! The command line: the models and URLs to run the battery on, in the order given, and
//! whether the everyday commands alone.

use std::path::{Path, PathBuf};

use clap::error::ErrorKind;
use clap::{ArgMatches, CommandFactory as _, FromArgMatches as _, Parser};

use crate::target::{self, Target};

/// The local models against a fixed battery, to choose stt's default model by measurement.
///
/// With no argument: every model scripts/fetch-llm installs that is in the models directory,
/// the default first. With STT_BENCH_WRITE=docs/PERFORMANCE.md (scripts/bench-llm sets it) the
/// figures replace the bench-llm section of that file.
#[derive(Debug, Parser)]
#[command(
    name = "bench-llm",
    bin_name = "scripts/bench-llm",
    override_usage = "scripts/bench-llm [--everyday] [--model PATH.gguf]... [--url \
                      CHAT_COMPLETIONS_URL [--name LABEL]]..."
)]
struct Args {
    /// A GGUF of your choice, served by llama-server as `stt-daemon up` serves it (again for
    /// more)
    #[arg(long, value_name = "PATH.gguf", value_parser = gguf)]
    model: Vec<PathBuf>,
    /// Any OpenAI-compatible chat completions URL (the server's default model, no key),
    /// without the figures only a local llama-server gives: start, cold command, RSS (again
    /// for more)
    #[arg(long, value_name = "CHAT_COMPLETIONS_URL", value_parser = url)]
    url: Vec<String>,
    /// The label of the --url right before it
    #[arg(long, value_name = "LABEL")]
    name: Vec<String>,
    /// The everyday commands alone, scored and printed, nothing written (to try a prompt in a
    /// few minutes)
    #[arg(long)]
    everyday: bool,
    /// What `cargo bench` adds to the arguments; nothing to this benchmark.
    #[arg(long, hide = true)]
    bench: bool,
}

/// What the command line asks for.
#[derive(Debug)]
pub struct Asked {
    /// The models and URLs named, in the order given, or those installed.
    pub targets: Vec<Target>,
    /// `--everyday`: the everyday commands alone, nothing written.
    pub everyday: bool,
    /// The command as the report shows it: the script and its arguments.
    pub command: String,
}

/// This process's arguments, the models installed under `root` when none is named; on a
/// wrong one, or `--help`, clap's message and the exit.
pub fn read(root: &Path) -> Asked {
    let matches = Args::command().get_matches();
    let args = Args::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let named = in_order(&args, &matches).unwrap_or_else(|e| fail(ErrorKind::ArgumentConflict, &e));
    let targets = target::chosen(root, named)
        .unwrap_or_else(|e| fail(ErrorKind::MissingRequiredArgument, &e));
    Asked { targets, everyday: args.everyday, command: shown() }
}

/// Ends the process with `message` and the usage, as clap ends it for a wrong argument.
fn fail(kind: ErrorKind, message: &str) -> ! {
    Args::command().error(kind, message).exit()
}

/// Each `--model` and `--url` where it stands among the others, a `--name` labelling the
/// `--url` right before it.
fn in_order(args: &Args, matches: &ArgMatches) -> Result<Vec<Target>, String> {
    enum Given<'a> {
        Model(&'a PathBuf),
        Url(&'a String),
        Name(&'a String),
    }
    let at = |id: &str| matches.indices_of(id).into_iter().flatten();
    let mut given: Vec<(usize, Given<'_>)> = at("model")
        .zip(args.model.iter().map(Given::Model))
        .chain(at("url").zip(args.url.iter().map(Given::Url)))
        .chain(at("name").zip(args.name.iter().map(Given::Name)))
        .collect();
    given.sort_by_key(|(index, _)| *index);
    let mut targets = Vec::new();
    for (_, given) in given {
        match given {
            Given::Model(path) => targets.push(Target::Gguf { path: path.clone(), role: None }),
            Given::Url(url) => targets.push(Target::Url { url: url.clone(), name: url.clone() }),
            Given::Name(label) => match targets.last_mut() {
                Some(Target::Url { name, .. }) => label.clone_into(name),
                _ => return Err("--name names the --url before it".into()),
            },
        }
    }
    Ok(targets)
}

/// A `--model`: a file that is there.
fn gguf(value: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(value);
    if path.is_file() { Ok(path) } else { Err(format!("no file {}", path.display())) }
}

/// A `--url`: http:// or https://.
fn url(value: &str) -> Result<String, String> {
    if value.starts_with("http://") || value.starts_with("https://") {
        Ok(value.to_owned())
    } else {
        Err(format!("{value} is not an http:// or https:// URL"))
    }
}

/// The command as it was given to the script (cargo's `--bench` left out), an argument with a
/// space quoted.
fn shown() -> String {
    std::iter::once("scripts/bench-llm".to_owned())
        .chain(
            std::env::args()
                .skip(1)
                .filter(|a| a != "--bench")
                .map(|a| if a.contains(' ') { format!("'{a}'") } else { a }),
        )
        .collect::<Vec<_>>()
        .join(" ")
}

//! What the battery runs against: a GGUF served by llama-server, or a chat completions URL;
//! those named on the command line, else those `scripts/fetch-llm` installed.

use std::path::{Path, PathBuf};

/// What the battery runs against.
#[derive(Debug, Clone)]
pub enum Target {
    /// A GGUF, served by llama-server as `up` serves it; `role`: what `scripts/fetch-llm
    /// --model` calls it, when it installs it.
    Gguf { path: PathBuf, role: Option<String> },
    /// Any OpenAI-compatible chat completions URL.
    Url { url: String, name: String },
}

impl Target {
    pub fn label(&self) -> String {
        match self {
            Self::Gguf { path, .. } => path
                .file_name()
                .map(|n| n.to_string_lossy().trim_end_matches(".gguf").to_owned())
                .unwrap_or_default(),
            Self::Url { name, .. } => name.clone(),
        }
    }

    /// The table's heading for it.
    pub fn heading(&self) -> String {
        match self {
            Self::Gguf { role: Some(role), .. } => {
                format!("{} (`fetch-llm --model {role}`)", self.label())
            }
            Self::Gguf { role: None, .. } => self.label(),
            Self::Url { url, name } if url == name => format!("`{url}`"),
            Self::Url { url, name } => format!("{name} (`{url}`)"),
        }
    }
}

/// The GGUF files `scripts/fetch-llm` installs that are in the models directory, in its order.
fn installed(root: &Path) -> Vec<Target> {
    let script = root.join("scripts/fetch-llm");
    let text = std::fs::read_to_string(&script)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", script.display()));
    let models = stt_testkit::models_dir();
    text.lines()
        .filter_map(|line| {
            let (role, name) = line.strip_prefix("MODEL_")?.split_once("_NAME=")?;
            Some(Target::Gguf { path: models.join(name.trim()), role: Some(role.to_owned()) })
        })
        .filter(|t| matches!(t, Target::Gguf { path, .. } if path.is_file()))
        .collect()
}

/// The targets named on the command line, each `--model` known by its role when
/// `scripts/fetch-llm` installs it; none named: every one installed.
pub fn chosen(root: &Path, named: Vec<Target>) -> Result<Vec<Target>, String> {
    let roles: Vec<Target> = installed(root);
    let mut targets: Vec<Target> = named
        .into_iter()
        .map(|target| match target {
            Target::Gguf { path, role: None } => {
                let role = roles.iter().find_map(|t| match t {
                    Target::Gguf { path: p, role } if p.file_name() == path.file_name() => {
                        role.clone()
                    }
                    _ => None,
                });
                Target::Gguf { path, role }
            }
            other => other,
        })
        .collect();
    if targets.is_empty() {
        targets = roles;
    }
    if targets.is_empty() {
        return Err("no model installed: run scripts/fetch-llm --model all".into());
    }
    Ok(targets)
}

//! A dotted key path of the config file (`assistant.max_tokens`, `tools.command[2].argv`):
//! what the parser finds a value by and what a validation problem names.

use std::fmt;

/// One step of a key path: a table key or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// A dotted key path such as `assistant.max_tokens` or `tools.command[2].argv`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct KeyPath(pub(crate) Vec<Seg>);

impl KeyPath {
    /// `section.key`.
    pub(crate) fn new(section: &str, key: &str) -> Self {
        Self(vec![Seg::Key(section.to_owned()), Seg::Key(key.to_owned())])
    }

    /// This path extended by a key.
    pub(crate) fn key(&self, key: &str) -> Self {
        let mut segs = self.0.clone();
        segs.push(Seg::Key(key.to_owned()));
        Self(segs)
    }

    /// This path extended by an array index.
    pub(crate) fn index(&self, index: usize) -> Self {
        let mut segs = self.0.clone();
        segs.push(Seg::Index(index));
        Self(segs)
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Index(index) => write!(f, "[{index}]")?,
                Seg::Key(key) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    let bare = !key.is_empty()
                        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                    if bare { f.write_str(key)? } else { write!(f, "{key:?}")? }
                }
            }
        }
        Ok(())
    }
}

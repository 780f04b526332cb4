//! What one of memory's tools did, as the model and the loop are told.

use stt_memory::ItemId;

/// What a call did.
#[derive(Debug, Clone, PartialEq)]
pub struct Called {
    pub ok: bool,
    /// What the model is told.
    pub result: String,
    /// A knowledge item the call added that corrects nothing yet (a dream checks it against
    /// the nearest item already held).
    pub created: Option<ItemId>,
}

impl Called {
    pub(crate) fn ok(result: impl Into<String>) -> Self {
        Called { ok: true, result: result.into(), created: None }
    }

    pub(crate) fn failed(result: impl Into<String>) -> Self {
        Called { ok: false, result: result.into(), created: None }
    }
}

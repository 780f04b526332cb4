//! What the lane tests share: a lane whose model is the scripted server.

use std::sync::Arc;
use std::time::Duration;

use stt_assistant::llm::{Lane, Settings};
use stt_assistant::memory::Memory;
use stt_llm::{Endpoint, Provider};
use stt_testkit::llm_server::LlmServer;

/// A lane on `server`'s model with `settings`, the built-in tools, and `memory` if any.
pub fn lane(server: &LlmServer, settings: Settings, memory: Option<Memory>) -> Lane {
    let client = Provider::new(Endpoint {
        url: server.url(),
        model: String::new(),
        api_key: None,
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(5),
    })
    .expect("a provider for the scripted server");
    Lane {
        client: Some(client),
        fallback: None,
        missing: String::new(),
        providers: None,
        registry: Arc::new(stt_tools::Registry::new(&[]).expect("the built-in tools")),
        settings: Arc::new(settings),
        memory,
    }
}

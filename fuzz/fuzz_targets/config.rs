//! The config loader on any text: never a panic, and an error always names a key or says
//! what is wrong.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Err(e) = stt_config::Config::parse(text, std::path::Path::new("fuzz.toml")) {
        assert!(!e.to_string().is_empty());
    }
});

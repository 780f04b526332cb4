//! The layering rule of docs/ARCHITECTURE.md, checked over `cargo metadata`: every crate of
//! the workspace has a layer, and depends (outside its tests) only on crates of lower
//! layers. The wire types import no stt crate; the engines import none either (they never
//! read the config, the bus or the app crate); only the binaries and their app crates read
//! the whole `Config`.

// Test helpers outside #[test] functions may panic: a panic is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

/// Each crate's layer; a crate may depend only on crates of a lower one.
const LAYERS: &[(&str, u8)] = &[
    // The wire: messages, codes, framing. ONNX Runtime, once per process. What every program
    // needs of the system (a program on PATH, a private file written atomically). Sound in
    // and out (devices, files, WAV).
    ("stt-proto", 0),
    ("stt-onnx", 0),
    ("stt-os", 0),
    ("stt-audio", 0),
    // Engines: speech found, words out, the model's API, texts and voices as vectors, speech
    // from text, text from pictures. No stt crate but layer 0's (the process's one ONNX
    // Runtime, the system's helpers, samples as WAV).
    ("stt-vad", 1),
    ("stt-asr", 1),
    ("stt-llm", 1),
    ("stt-embed", 1),
    ("stt-ocr", 1),
    ("stt-dictate", 1),
    ("stt-intent", 1),
    ("stt-memory", 1),
    ("stt-speaker", 1),
    ("stt-voice", 1),
    ("stt-wake", 1),
    // The config file's types and loading; the sockets, which carry only stt-proto types.
    ("stt-config", 2),
    ("stt-bus", 2),
    // What the binaries share: start-up and logging, the ctl verbs, the assistant's tools.
    ("stt-app", 3),
    ("stt-control", 3),
    ("stt-tools", 3),
    // The programs.
    ("stt-daemon", 4),
    ("stt-assistant", 4),
    ("stt-tui", 4),
    ("stt-ctl", 4),
    // What tests share (the sandbox, waits, speech, the scripted model), then the
    // cross-process tests and benchmarks.
    ("stt-testkit", 5),
    ("stt-tests", 6),
];

/// Crates that may name `stt_config::Config` (the whole file): the programs and their app
/// crates. Everything else gets the values it needs passed in.
const READ_CONFIG: &[&str] =
    &["stt-config", "stt-app", "stt-control", "stt-daemon", "stt-assistant", "stt-tui", "stt-ctl"];

fn metadata() -> Value {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn every_crate_depends_only_on_lower_layers() {
    let layers: BTreeMap<&str, u8> = LAYERS.iter().copied().collect();
    let mut failures = Vec::new();
    for package in metadata()["packages"].as_array().unwrap() {
        let name = package["name"].as_str().unwrap();
        let Some(&layer) = layers.get(name) else {
            failures.push(format!("{name} has no layer: add it to LAYERS (and ARCHITECTURE.md)"));
            continue;
        };
        for dep in package["dependencies"].as_array().unwrap() {
            let dep_name = dep["name"].as_str().unwrap();
            let Some(&dep_layer) = layers.get(dep_name) else { continue };
            // Tests may use anything (stt-testkit included).
            if dep["kind"].as_str() == Some("dev") {
                continue;
            }
            if dep_layer >= layer {
                failures.push(format!(
                    "{name} (layer {layer}) depends on {dep_name} (layer {dep_layer})"
                ));
            }
            // Engines import only layer 0 (the one ONNX Runtime, the system helpers, sound).
            if layer == 1 && dep_layer != 0 {
                failures.push(format!("{name} is an engine but depends on {dep_name}"));
            }
        }
    }
    assert!(failures.is_empty(), "the layering rule is broken:\n  {}", failures.join("\n  "));
}

#[test]
fn only_the_programs_read_the_whole_config() {
    let mut failures = Vec::new();
    for package in metadata()["packages"].as_array().unwrap() {
        let name = package["name"].as_str().unwrap();
        if READ_CONFIG.contains(&name) || name == "stt-tests" {
            continue;
        }
        let manifest = Path::new(package["manifest_path"].as_str().unwrap());
        let src = manifest.parent().unwrap().join("src");
        for file in rust_files(&src) {
            let text = std::fs::read_to_string(&file).unwrap();
            if text.contains("stt_config::Config") || text.contains("stt_config::{Config") {
                failures.push(format!("{} names stt_config::Config", file.display()));
            }
        }
    }
    assert!(failures.is_empty(), "pass the values in instead:\n  {}", failures.join("\n  "));
}

fn rust_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return files };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// A crate's modules by path (`["memory", "tools"]`; the crate's root is `[]`) and their files.
fn modules(src: &Path) -> BTreeMap<Vec<String>, std::path::PathBuf> {
    rust_files(src)
        .into_iter()
        .map(|file| {
            let relative = file.strip_prefix(src).unwrap().with_extension("");
            let mut path: Vec<String> =
                relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            if path.last().is_some_and(|p| p == "mod") {
                path.pop();
            }
            if path == ["lib"] || path == ["main"] {
                path.clear();
            }
            (path, file)
        })
        .collect()
}

/// The paths a module's code names through `crate::`, `super::` and `self::`, braces
/// expanded one level (`super::{a::b, c}`); its tests (from `#[cfg(test)]\nmod tests`) and
/// comments left out.
fn named_paths(text: &str) -> Vec<(String, Vec<String>)> {
    let code = text.split("\n#[cfg(test)]\nmod tests").next().unwrap_or_default();
    let code: String = code
        .lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    let mut named = Vec::new();
    let word = |c: char| c.is_alphanumeric() || c == '_';
    for head in ["crate", "super", "self"] {
        for (at, _) in code.match_indices(&format!("{head}::")) {
            if code[..at].chars().next_back().is_some_and(word) {
                continue;
            }
            let rest = &code[at + head.len() + 2..];
            let mut path = Vec::new();
            let mut rest = rest;
            loop {
                let end = rest.find(|c: char| !word(c)).unwrap_or(rest.len());
                if end == 0 {
                    break;
                }
                path.push(rest[..end].to_owned());
                match rest[end..].strip_prefix("::") {
                    Some(more) => rest = more,
                    None => {
                        rest = "";
                        break;
                    }
                }
            }
            if let Some(group) = rest.strip_prefix('{').and_then(|r| r.split('}').next()) {
                for item in group.split(',') {
                    let item = item.split(" as ").next().unwrap_or_default().trim();
                    let mut full = path.clone();
                    full.extend(item.split("::").filter(|p| !p.is_empty()).map(str::to_owned));
                    named.push((head.to_owned(), full));
                }
            } else {
                named.push((head.to_owned(), path));
            }
        }
    }
    named
}

/// Which of `modules` the module `at` (in `file`) imports: the longest module each path it
/// names starts with, its own ancestors and descendants left out (a parent declares its
/// children; a child may use its parent's items).
fn imports(
    at: &[String],
    file: &Path,
    modules: &BTreeMap<Vec<String>, std::path::PathBuf>,
) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut found = Vec::new();
    for (head, mut path) in named_paths(&text) {
        let mut base: Vec<String> = match head.as_str() {
            "crate" => Vec::new(),
            "super" => at[..at.len().saturating_sub(1)].to_vec(),
            _ => at.to_vec(),
        };
        while path.first().is_some_and(|p| p == "super") {
            path.remove(0);
            base.pop();
        }
        base.extend(path);
        let Some(target) =
            (1..=base.len()).rev().map(|n| base[..n].to_vec()).find(|m| modules.contains_key(m))
        else {
            continue;
        };
        let related = target.starts_with(at) || at.starts_with(&target);
        if !related && !found.contains(&target) {
            found.push(target);
        }
    }
    found
}

#[test]
fn no_crate_has_modules_that_import_each_other() {
    let mut circles = Vec::new();
    for package in metadata()["packages"].as_array().unwrap() {
        let manifest = Path::new(package["manifest_path"].as_str().unwrap());
        let modules = modules(&manifest.parent().unwrap().join("src"));
        let edges: BTreeMap<&Vec<String>, Vec<Vec<String>>> = modules
            .iter()
            .filter(|(at, _)| !at.is_empty())
            .map(|(at, file)| (at, imports(at, file, &modules)))
            .collect();
        // Every module reachable from `from`.
        let reach = |from: &Vec<String>| {
            let mut seen: Vec<Vec<String>> = Vec::new();
            let mut todo = vec![from.clone()];
            while let Some(at) = todo.pop() {
                for next in edges.get(&at).into_iter().flatten() {
                    if !seen.contains(next) {
                        seen.push(next.clone());
                        todo.push(next.clone());
                    }
                }
            }
            seen
        };
        let mut reported: Vec<Vec<String>> = Vec::new();
        for at in edges.keys() {
            if reported.contains(at) {
                continue;
            }
            let circle: Vec<Vec<String>> =
                reach(at).into_iter().filter(|other| reach(other).contains(at)).collect();
            if !circle.is_empty() {
                let names: Vec<String> = circle.iter().map(|m| m.join("::")).collect();
                circles.push(format!(
                    "{}: {}",
                    package["name"].as_str().unwrap(),
                    names.join(" ⇄ ")
                ));
                reported.extend(circle);
            }
        }
    }
    assert!(circles.is_empty(), "modules that import each other:\n  {}", circles.join("\n  "));
}

/// Each crate's front page (its `lib.rs`'s `//!`) names every public module it has, so the
/// map a newcomer reads first has no module missing.
#[test]
fn every_crate_names_its_public_modules_on_its_front_page() {
    let mut missing = Vec::new();
    for package in metadata()["packages"].as_array().unwrap() {
        let manifest = Path::new(package["manifest_path"].as_str().unwrap());
        let lib = manifest.parent().unwrap().join("src/lib.rs");
        let Ok(text) = std::fs::read_to_string(&lib) else { continue };
        let front: String =
            text.lines().filter_map(|l| l.strip_prefix("//!")).collect::<Vec<_>>().join("\n");
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("pub mod ") else { continue };
            let name: String =
                rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !front.contains(&format!("`{name}`")) {
                missing.push(format!("{}: {name}", lib.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "modules the front page does not name:\n  {}",
        missing.join("\n  ")
    );
}

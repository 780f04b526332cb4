//! What the model sent back for one request, read from the proxy's record of it: the text,
//! the calls, the usage, llama-server's timings and when the first token came.

use std::time::Instant;

use serde_json::{Value, json};

use crate::proxy::{Exchange, dechunk, find, header};

/// llama-server's own figures for one request.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timings {
    /// Prompt tokens read, and in how long.
    pub prompt_n: f64,
    pub prompt_ms: f64,
    /// Prompt tokens served from its cache.
    pub cache_n: f64,
    pub predicted_n: f64,
    pub predicted_ms: f64,
}

/// What the model sent back for one request.
#[derive(Debug)]
pub struct Output {
    pub status: u16,
    /// The text, or the error's body.
    pub content: String,
    /// Calls the server returned as such: (name, arguments as written).
    pub calls: Vec<(String, String)>,
    finish: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub timings: Option<Timings>,
    streamed: bool,
    /// When the first piece of text or of a call reached the proxy.
    pub first: Option<Instant>,
    pub sent: Instant,
    pub done: Instant,
    pub max_tokens: Option<u64>,
    /// The request's last message, for inspection.
    pub asked: String,
    /// The names of the tools the request offered.
    pub offered: Vec<String>,
}

/// Whether an SSE line carries a piece of text or of a call.
fn token_line(line: &str) -> bool {
    let Some(data) = line.trim().strip_prefix("data:") else { return false };
    let Ok(event) = serde_json::from_str::<Value>(data.trim()) else { return false };
    let delta = &event["choices"][0]["delta"];
    let text = |key: &str| delta[key].as_str().is_some_and(|s| !s.is_empty());
    text("content")
        || text("reasoning_content")
        || delta["tool_calls"].as_array().is_some_and(|c| !c.is_empty())
}

impl Output {
    pub fn of(exchange: &Exchange) -> Self {
        let raw = &exchange.raw;
        let head_end = find(raw, b"\r\n\r\n").map_or(raw.len(), |at| at + 4);
        let head = String::from_utf8_lossy(&raw[..head_end]).into_owned();
        let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let body = if header(&head, "transfer-encoding").is_some_and(|v| v.contains("chunked")) {
            dechunk(&raw[head_end..]).0
        } else {
            raw[head_end..].to_vec()
        };
        let text = String::from_utf8_lossy(&body).into_owned();
        let request = &exchange.request;
        let asked = request["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_owned();
        let mut out = Self {
            status,
            content: String::new(),
            calls: Vec::new(),
            finish: String::new(),
            prompt_tokens: 0,
            completion_tokens: 0,
            timings: None,
            streamed: text.trim_start().starts_with("data:"),
            first: None,
            sent: exchange.sent,
            done: exchange.done,
            max_tokens: request["max_tokens"].as_u64(),
            asked,
            offered: request["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                .collect(),
        };
        if out.streamed {
            for line in text.lines() {
                let Some(data) = line.trim().strip_prefix("data:") else { continue };
                if let Ok(event) = serde_json::from_str::<Value>(data.trim()) {
                    out.merge_piece(&event);
                }
            }
            out.first = first_token(exchange, head_end);
        } else if let Ok(reply) = serde_json::from_str::<Value>(&text) {
            let message = &reply["choices"][0]["message"];
            out.content = message["content"].as_str().unwrap_or_default().to_owned();
            for call in message["tool_calls"].as_array().into_iter().flatten() {
                let name = call["function"]["name"].as_str().unwrap_or_default().to_owned();
                let args = &call["function"]["arguments"];
                out.calls
                    .push((name, args.as_str().map_or_else(|| args.to_string(), str::to_owned)));
            }
            out.finish = reply["choices"][0]["finish_reason"].as_str().unwrap_or_default().into();
            out.figures(&reply);
        }
        if status != 200 {
            out.content = text;
        }
        out
    }

    /// One streamed event added in.
    fn merge_piece(&mut self, event: &Value) {
        let choice = &event["choices"][0];
        let delta = &choice["delta"];
        if let Some(piece) = delta["content"].as_str() {
            self.content.push_str(piece);
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = usize::try_from(call["index"].as_u64().unwrap_or(0)).unwrap_or(0);
            while self.calls.len() <= index {
                self.calls.push((String::new(), String::new()));
            }
            if let Some(name) = call["function"]["name"].as_str() {
                self.calls[index].0.push_str(name);
            }
            if let Some(args) = call["function"]["arguments"].as_str() {
                self.calls[index].1.push_str(args);
            }
        }
        if let Some(finish) = choice["finish_reason"].as_str() {
            finish.clone_into(&mut self.finish);
        }
        self.figures(event);
    }

    /// Usage and timings, where the event has them.
    pub fn figures(&mut self, event: &Value) {
        let usage = &event["usage"];
        if usage.is_object() {
            self.prompt_tokens = usage["prompt_tokens"].as_u64().unwrap_or(0);
            self.completion_tokens = usage["completion_tokens"].as_u64().unwrap_or(0);
        }
        let t = &event["timings"];
        if t.is_object() {
            let f = |key: &str| t[key].as_f64().unwrap_or(0.0);
            self.timings = Some(Timings {
                prompt_n: f("prompt_n"),
                prompt_ms: f("prompt_ms"),
                cache_n: f("cache_n"),
                predicted_n: f("predicted_n"),
                predicted_ms: f("predicted_ms"),
            });
        }
    }

    /// The output as saved for inspection; times in ms from `start`.
    pub fn json(&self, start: Instant) -> Value {
        let ms = |t: Instant| round(ms_between(start, t));
        json!({
            "status": self.status,
            "asked": self.asked,
            "tools": self.offered,
            "max_tokens": self.max_tokens,
            "content": self.content,
            "tool_calls": self.calls.iter().map(|(n, a)| json!({"name": n, "arguments": a})).collect::<Vec<_>>(),
            "finish": self.finish,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "timings": self.timings.map(|t| json!({"prompt_n": t.prompt_n, "prompt_ms": round(t.prompt_ms), "cache_n": t.cache_n, "predicted_n": t.predicted_n, "predicted_ms": round(t.predicted_ms)})),
            "sent_ms": ms(self.sent),
            "first_token_ms": self.first.map(ms),
            "done_ms": ms(self.done),
        })
    }
}

/// When the first line carrying a piece of text or of a call reached the proxy.
fn first_token(exchange: &Exchange, head_end: usize) -> Option<Instant> {
    let mut from = head_end;
    let mut pending = String::new();
    for &(at, end) in &exchange.reads {
        if end <= from {
            continue;
        }
        pending.push_str(&String::from_utf8_lossy(&exchange.raw[from..end]));
        from = end;
        while let Some(newline) = pending.find('\n') {
            if token_line(&pending[..newline]) {
                return Some(at);
            }
            pending.drain(..=newline);
        }
    }
    None
}

pub fn ms_between(from: Instant, to: Instant) -> f64 {
    to.saturating_duration_since(from).as_secs_f64() * 1000.0
}

pub fn round(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

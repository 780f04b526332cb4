//! OCR with the real models `scripts/fetch-models` installs, on pictures of known text drawn
//! here ([`stt_testkit::picture`], with the DejaVu font Debian ships): dark on light and light on
//! dark, as screens show it, several lines and two boxes on one line. Without the models
//! every test fails with the command that installs them (`scripts/test` runs it first).

#![allow(clippy::unwrap_used, reason = "a test: a failure should panic")]

use stt_ocr::{Ocr, Picture};

fn ocr() -> Ocr {
    let models = stt_config::dirs::models_dir_with(&stt_config::dirs::Env::from_process()).unwrap();
    Ocr::load(&models.join("ocr"), &stt_onnx::runtime_library(&models), 1)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// `lines` drawn as [`stt_testkit::picture::draw`] does.
fn draw(w: usize, h: usize, size: f32, ink: u8, paper: u8, lines: &[(f32, f32, &str)]) -> Picture {
    Picture { width: w, height: h, rgb: stt_testkit::picture::draw(w, h, size, ink, paper, lines) }
}

fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn lines_of_text_are_read_back_in_order() {
    let mut ocr = ocr();
    let lines = [
        (40.0, 30.0, "Meeting with Siobhan at 3 pm"),
        (40.0, 90.0, "Invoice 2041 is due on Friday"),
        (40.0, 150.0, "Build failed: 3 tests, see the log"),
    ];
    let picture = draw(900, 220, 28.0, 20, 245, &lines);
    let found = ocr.read(&picture).unwrap();
    let text = stt_ocr::text(&found);
    let expected: Vec<&str> = lines.iter().map(|l| l.2).collect();
    let read: Vec<String> = text.lines().map(words).collect();
    assert_eq!(read, expected, "{found:?}");
    assert!(found.iter().all(|l| l.score > 0.8), "{found:?}");
}

#[test]
fn light_text_on_a_dark_screen_and_two_boxes_on_one_line() {
    let mut ocr = ocr();
    let picture = draw(
        1000,
        120,
        24.0,
        230,
        30,
        &[(30.0, 40.0, "File  Edit  View"), (600.0, 40.0, "cargo build --release")],
    );
    let text = stt_ocr::text(&ocr.read(&picture).unwrap());
    assert_eq!(words(&text), "File Edit View cargo build --release", "{text:?}");
}

#[test]
fn a_blank_picture_has_no_text_and_a_broken_file_is_refused() {
    let mut ocr = ocr();
    let blank = Picture { width: 300, height: 100, rgb: vec![255; 300 * 100 * 3] };
    assert!(ocr.read(&blank).unwrap().is_empty());
    let why = Picture::from_png(b"\x89PNG not really").unwrap_err().to_string();
    assert!(why.contains("PNG"), "{why}");
}

//! Word wrapping of styled lines into rows of a given width.
//!
//! The screen wraps lines itself rather than letting the paragraph widget do it, so the
//! number of rows a pane holds is known to [`update`](crate::update::update) as well:
//! scrolling by a page and sticking to the bottom need it.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// Wraps `line` into rows at most `width` columns wide, breaking at spaces where it can
/// and inside a word only when the word is wider than a row. Rows after the first start
/// with `indent` spaces. A `\n` in the text starts a new row; tabs and other control
/// characters show as spaces.
pub fn wrap(line: &Line<'_>, width: usize, indent: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    let indent = if indent >= width { 0 } else { indent };
    let mut rows = Rows { width, indent, done: Vec::new(), row: Vec::new(), used: 0 };
    for token in tokens(line) {
        match token {
            Token::Newline => rows.break_row(),
            Token::Space(cells) => {
                for cell in cells {
                    // A space that ends a row, or would start a continuation row, is
                    // not drawn.
                    if rows.used + 1 > width {
                        rows.break_row();
                    } else if rows.done.is_empty() || rows.used > rows.start() {
                        rows.push(cell, 1);
                    }
                }
            }
            Token::Word(cells) => {
                let w: usize = cells.iter().map(|(c, _)| char_width(*c)).sum();
                if rows.used + w > width && w <= width - indent && rows.used > rows.start() {
                    rows.break_row();
                }
                for cell in cells {
                    let cw = char_width(cell.0);
                    if rows.used + cw > width && rows.used > rows.start() {
                        rows.break_row();
                    }
                    rows.push(cell, cw);
                }
            }
        }
    }
    rows.finish()
}

/// The display width of one character (control characters are shown as spaces).
pub fn char_width(c: char) -> usize {
    if c.is_control() { 1 } else { c.width().unwrap_or(0) }
}

/// The display width of a string.
pub fn str_width(s: &str) -> usize {
    s.chars().map(char_width).sum()
}

type Cell = (char, Style);

enum Token {
    Word(Vec<Cell>),
    Space(Vec<Cell>),
    Newline,
}

fn tokens(line: &Line<'_>) -> Vec<Token> {
    let mut out = Vec::new();
    let mut word: Vec<Cell> = Vec::new();
    let mut space: Vec<Cell> = Vec::new();
    for span in &line.spans {
        let style = line.style.patch(span.style);
        for c in span.content.chars() {
            if c == '\n' {
                flush(&mut out, &mut word, &mut space);
                out.push(Token::Newline);
            } else if c == ' ' || c == '\t' {
                if !word.is_empty() {
                    out.push(Token::Word(std::mem::take(&mut word)));
                }
                space.push((' ', style));
            } else {
                if !space.is_empty() {
                    out.push(Token::Space(std::mem::take(&mut space)));
                }
                word.push((if c.is_control() { ' ' } else { c }, style));
            }
        }
    }
    flush(&mut out, &mut word, &mut space);
    out
}

fn flush(out: &mut Vec<Token>, word: &mut Vec<Cell>, space: &mut Vec<Cell>) {
    if !word.is_empty() {
        out.push(Token::Word(std::mem::take(word)));
    }
    if !space.is_empty() {
        out.push(Token::Space(std::mem::take(space)));
    }
}

struct Rows {
    width: usize,
    indent: usize,
    done: Vec<Line<'static>>,
    row: Vec<Cell>,
    used: usize,
}

impl Rows {
    /// Where text starts on the current row (after the indent of a continuation row).
    fn start(&self) -> usize {
        if self.done.is_empty() { 0 } else { self.indent }
    }

    fn push(&mut self, cell: Cell, width: usize) {
        self.row.push(cell);
        self.used += width;
    }

    fn break_row(&mut self) {
        while self.row.last().is_some_and(|(c, _)| *c == ' ') && self.used > self.start() {
            self.row.pop();
            self.used -= 1;
        }
        let row = std::mem::take(&mut self.row);
        self.done.push(to_line(row));
        self.row = vec![(' ', Style::default()); self.indent];
        self.used = self.indent;
        debug_assert!(self.used < self.width);
    }

    fn finish(mut self) -> Vec<Line<'static>> {
        if self.used > self.start() || self.done.is_empty() {
            self.break_row();
        }
        self.done
    }
}

fn to_line(cells: Vec<Cell>) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut style: Option<Style> = None;
    for (c, s) in cells {
        if style.is_some_and(|current| current != s) {
            spans.push(Span::styled(std::mem::take(&mut text), style.unwrap_or_default()));
        }
        style = Some(s);
        text.push(c);
    }
    if !text.is_empty() {
        spans.push(Span::styled(text, style.unwrap_or_default()));
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::Stylize;

    fn check(text: &str, width: usize, indent: usize, expected: &[&str]) {
        let rows: Vec<String> = wrap(&Line::from(Span::raw(text)), width, indent)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(rows, expected, "{text:?} in {width} columns");
        for row in &rows {
            assert!(str_width(row) <= width, "{row:?} is wider than {width}");
        }
    }

    #[test]
    fn wraps_at_spaces_and_breaks_long_words() {
        check("", 10, 2, &[""]);
        check("short", 10, 2, &["short"]);
        check("what time is it", 10, 0, &["what time", "is it"]);
        check("what time is it", 10, 2, &["what time", "  is it"]);
        check("abcdefghijkl", 5, 0, &["abcde", "fghij", "kl"]);
        check("ab abcdefghijkl", 5, 1, &["ab ab", " cdef", " ghij", " kl"]);
        check("one\ntwo  three", 20, 2, &["one", "  two  three"]);
        check("tail   ", 4, 0, &["tail"]);
        check("日本語のテキスト", 5, 0, &["日本", "語の", "テキ", "スト"]);
        check("a\tb\u{7}c", 10, 0, &["a b c"]);
    }

    #[test]
    fn keeps_the_styles_of_the_pieces() {
        let line = Line::from(vec!["error: ".red(), "not ready".into()]);
        let rows = wrap(&line, 9, 0);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].spans[0].content, "error:");
        assert_eq!(rows[0].spans[0].style, Style::new().red());
        assert_eq!(rows[1].spans[0].content, "not ready");
        assert_eq!(rows[1].spans[0].style, Style::new());
    }
}

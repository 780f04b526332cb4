//! The tools that bring the model context from outside the conversation: the user's
//! documents (`list_dir`, `read_file`, only under `[tools].document_roots`), a web page
//! (`fetch_web`) and a web search (`web_search`, only with `[tools].search_url`). All read
//! only. What they return is capped ([`MAX_CHARS`]) with a note saying where it was cut and
//! how to read on, so one big file cannot fill a small model's window.
//!
//! Documents are read by what their name ends with: PDF (`pdf-extract`), DOCX (`docx-rs`),
//! anything else as UTF-8 text (Markdown, notes, code); a file that is not text is refused
//! with why. Web pages are fetched with a time and size limit and their HTML turned into
//! text (`html2text`).

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Characters one call returns at most.
pub const MAX_CHARS: usize = 12_000;

/// The largest file `read_file` opens.
pub const MAX_FILE_BYTES: u64 = 20 * 1024 * 1024;

/// Entries `list_dir` lists at most.
pub const MAX_ENTRIES: usize = 200;

/// The most of a web page read, in bytes.
pub const MAX_PAGE_BYTES: usize = 2 * 1024 * 1024;

/// How long a web request may take.
pub const WEB_TIMEOUT: Duration = Duration::from_secs(15);

/// Search results `web_search` lists.
const RESULTS: usize = 5;

/// The folders the model may read, as `[tools].document_roots` gives them (`~` is the home
/// directory); the refusals name the setting.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Roots(Vec<PathBuf>);

impl Roots {
    pub fn new(roots: &[PathBuf]) -> Self {
        Self(roots.iter().map(|r| expand_home(r)).collect())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `path` as a real path under one of the roots (a relative one is taken under the
    /// first), or why it may not be read.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, String> {
        let Some(first) = self.0.first() else {
            return Err("no folder may be read: add the folders the assistant may read to \
                        [tools].document_roots in the config (none by default)"
                .into());
        };
        let given = expand_home(Path::new(path.trim()));
        let joined = if given.is_absolute() { given.clone() } else { first.join(&given) };
        let real = match joined.canonicalize() {
            Ok(real) => real,
            // Asked by name in a folder it guessed ("notes/shopping.md"): the one file of
            // that name under the roots.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                match given.file_name().map(|name| self.named(name)) {
                    Some(found) if found.len() == 1 => found[0].clone(),
                    Some(found) if found.len() > 1 => {
                        let list: Vec<String> =
                            found.iter().map(|f| f.display().to_string()).collect();
                        return Err(format!(
                            "there is no {}; files of that name: {}",
                            joined.display(),
                            list.join(", ")
                        ));
                    }
                    _ => return Err(format!("cannot open {}: {e}", joined.display())),
                }
            }
            Err(e) => return Err(format!("cannot open {}: {e}", joined.display())),
        };
        for root in &self.0 {
            if let Ok(root) = root.canonicalize()
                && real.starts_with(&root)
            {
                return Ok(real);
            }
        }
        Err(format!(
            "{} is outside the folders the assistant may read ({}): add its folder to \
             [tools].document_roots to allow it",
            real.display(),
            self.list()
        ))
    }

    /// Files called `name` under the roots (hidden folders left out), a few levels down.
    fn named(&self, name: &std::ffi::OsStr) -> Vec<PathBuf> {
        const DEPTH: usize = 4;
        const LOOKED_AT: usize = 5_000;
        let mut found = Vec::new();
        let mut seen = 0;
        let mut folders: Vec<(PathBuf, usize)> = self.0.iter().map(|r| (r.clone(), 0)).collect();
        while let Some((dir, depth)) = folders.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                seen += 1;
                if seen > LOOKED_AT {
                    return found;
                }
                let path = entry.path();
                let hidden = entry.file_name().to_string_lossy().starts_with('.');
                match entry.file_type() {
                    Ok(t) if t.is_dir() && !hidden && depth < DEPTH => {
                        folders.push((path, depth + 1));
                    }
                    Ok(t) if t.is_file() && entry.file_name() == name => {
                        found.extend(path.canonicalize().ok());
                    }
                    _ => {}
                }
            }
        }
        found.sort();
        found.dedup();
        found
    }

    fn list(&self) -> String {
        self.0.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
    }
}

fn expand_home(path: &Path) -> PathBuf {
    match path.strip_prefix("~") {
        Ok(rest) => std::env::var_os("HOME")
            .map_or_else(|| path.to_owned(), |h| PathBuf::from(h).join(rest)),
        Err(_) => path.to_owned(),
    }
}

/// `list_dir(path)`: the folder's entries, folders first, each with its size.
pub fn list_dir(roots: &Roots, path: &str) -> Result<String, String> {
    let dir = roots.resolve(if path.trim().is_empty() { "." } else { path })?;
    let entries =
        std::fs::read_dir(&dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut lines: Vec<(bool, String)> = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        // Hidden files stay hidden: they are settings and keys more often than documents.
        if name.starts_with('.') {
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        if meta.is_dir() {
            lines.push((true, format!("{name}/")));
        } else {
            lines.push((false, format!("{name} ({})", size(meta.len()))));
        }
    }
    lines.sort();
    lines.sort_by_key(|(dir, _)| !dir);
    let total = lines.len();
    let mut text = format!("{}:\n", dir.display());
    for (_, line) in lines.iter().take(MAX_ENTRIES) {
        text.push_str(line);
        text.push('\n');
    }
    if total == 0 {
        text.push_str("(empty)\n");
    } else if total > MAX_ENTRIES {
        text.push_str(&format!("(the first {MAX_ENTRIES} of {total} entries)\n"));
    }
    Ok(text)
}

fn size(bytes: u64) -> String {
    #[allow(clippy::cast_precision_loss, reason = "a size shown to one decimal")]
    let b = bytes as f64;
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{:.1} KB", b / 1024.0),
        _ => format!("{:.1} MB", b / 1_048_576.0),
    }
}

/// `read_file(path, offset)`: the file's text from character `offset`, at most
/// [`MAX_CHARS`] of it, with a note when there is more.
pub fn read_file(roots: &Roots, path: &str, offset: usize) -> Result<String, String> {
    let file = roots.resolve(path)?;
    let meta =
        std::fs::metadata(&file).map_err(|e| format!("cannot open {}: {e}", file.display()))?;
    if meta.is_dir() {
        return Err(format!("{} is a folder: list it with list_dir", file.display()));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "{} is {}, more than the {} the assistant reads",
            file.display(),
            size(meta.len()),
            size(MAX_FILE_BYTES)
        ));
    }
    let bytes = std::fs::read(&file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let text = document_text(&file, &bytes)?;
    Ok(capped(&text, offset, &format!("{}", file.display())))
}

/// The text of a document's bytes, by what its name ends with.
pub fn document_text(file: &Path, bytes: &[u8]) -> Result<String, String> {
    let extension =
        file.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    match extension.as_str() {
        "pdf" => {
            // A damaged PDF can panic the parser: it is refused, not fatal.
            let read = std::panic::catch_unwind(|| pdf_extract::extract_text_from_mem(bytes));
            match read {
                Ok(Ok(text)) => Ok(text),
                Ok(Err(e)) => Err(format!("cannot read the PDF {}: {e}", file.display())),
                Err(_) => Err(format!("cannot read the PDF {}: it is damaged", file.display())),
            }
        }
        "docx" => {
            docx_text(bytes).map_err(|e| format!("cannot read the DOCX {}: {e}", file.display()))
        }
        "doc" | "odt" | "xlsx" | "pptx" | "zip" | "png" | "jpg" | "jpeg" | "gif" | "mp3"
        | "wav" => Err(format!(
            "{} is not a text document the assistant reads (text, Markdown, PDF, DOCX)",
            file.display()
        )),
        _ => {
            if bytes.contains(&0) {
                return Err(format!(
                    "{} is not text (it holds binary data): the assistant reads text, Markdown, PDF and DOCX",
                    file.display()
                ));
            }
            Ok(String::from_utf8_lossy(bytes).into_owned())
        }
    }
}

/// The paragraphs of a DOCX, tables' cells included, one a line.
fn docx_text(bytes: &[u8]) -> Result<String, String> {
    use docx_rs::{DocumentChild, TableCellContent, TableChild, TableRowChild};
    let docx = docx_rs::read_docx(bytes).map_err(|e| e.to_string())?;
    let mut lines = Vec::new();
    for child in &docx.document.children {
        match child {
            DocumentChild::Paragraph(p) => lines.push(paragraph_text(p)),
            DocumentChild::Table(table) => {
                for TableChild::TableRow(row) in &table.rows {
                    let cells: Vec<String> = row
                        .cells
                        .iter()
                        .map(|TableRowChild::TableCell(cell)| {
                            cell.children
                                .iter()
                                .filter_map(|c| match c {
                                    TableCellContent::Paragraph(p) => Some(paragraph_text(p)),
                                    _ => None,
                                })
                                .collect::<Vec<_>>()
                                .join(" ")
                        })
                        .collect();
                    lines.push(cells.join(" | "));
                }
            }
            _ => {}
        }
    }
    Ok(lines.join("\n"))
}

fn paragraph_text(p: &docx_rs::Paragraph) -> String {
    use docx_rs::{ParagraphChild, RunChild};
    let mut text = String::new();
    for child in &p.children {
        if let ParagraphChild::Run(run) = child {
            for piece in &run.children {
                match piece {
                    RunChild::Text(t) => text.push_str(&t.text),
                    RunChild::Tab(_) => text.push('\t'),
                    RunChild::Break(_) => text.push('\n'),
                    _ => {}
                }
            }
        }
    }
    text
}

/// `text` from character `offset`, at most [`MAX_CHARS`], with a note saying what was left
/// out and how to read on.
pub fn capped(text: &str, offset: usize, what: &str) -> String {
    let total = text.chars().count();
    if offset >= total && total > 0 {
        return format!("({what} has {total} characters: nothing from {offset} on)");
    }
    let piece: String = text.chars().skip(offset).take(MAX_CHARS).collect();
    let end = offset + piece.chars().count();
    let mut out = piece;
    if offset > 0 || end < total {
        out.push_str(&format!(
            "\n(cut: characters {offset} to {end} of {total} of {what}{})",
            if end < total { format!("; read on with offset {end}") } else { String::new() }
        ));
    }
    out
}

/// `fetch_web(url)`: the page's text.
pub async fn fetch_web(url: &str) -> Result<String, String> {
    let url = url.trim();
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(format!("'{url}' is not a web address: give an http:// or https:// URL"));
    }
    let (body, kind) = get(url).await?;
    let text = if kind.contains("html") || kind.is_empty() && looks_like_html(&body) {
        html2text::from_read(body.as_slice(), 100)
            .map_err(|e| format!("cannot read the page {url}: {e}"))?
    } else if kind.starts_with("text/") || kind.contains("json") || kind.contains("xml") {
        String::from_utf8_lossy(&body).into_owned()
    } else {
        return Err(format!(
            "{url} is not a text page ({kind}): the assistant reads HTML and text"
        ));
    };
    Ok(capped(text.trim(), 0, url))
}

fn looks_like_html(body: &[u8]) -> bool {
    let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
    head.contains("<html") || head.contains("<!doctype html")
}

/// The body of `url` (at most [`MAX_PAGE_BYTES`]) and its content type.
async fn get(url: &str) -> Result<(Vec<u8>, String), String> {
    let client = reqwest::Client::builder()
        .timeout(WEB_TIMEOUT)
        .redirect(reqwest::redirect::Policy::limited(5))
        .user_agent(concat!("stt/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot make a web client: {e}"))?;
    let mut response = client.get(url).send().await.map_err(|e| web_error(url, &e))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("{url} answered {status}"));
    }
    let kind = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| web_error(url, &e))? {
        body.extend_from_slice(&chunk);
        if body.len() >= MAX_PAGE_BYTES {
            body.truncate(MAX_PAGE_BYTES);
            break;
        }
    }
    Ok((body, kind))
}

fn web_error(url: &str, e: &reqwest::Error) -> String {
    if url.starts_with("https://") && !cfg!(feature = "https") {
        return format!(
            "cannot fetch {url}: this build has no TLS; build stt-assistant with --features https \
             (scripts/install does)"
        );
    }
    if e.is_timeout() {
        return format!("{url} did not answer within {} s", WEB_TIMEOUT.as_secs());
    }
    format!("cannot fetch {url}: {e}")
}

/// `web_search(query)` against a SearXNG-style endpoint (`GET endpoint?q=…&format=json`,
/// `results: [{title, url, content}]`): the first few results, one a paragraph.
pub async fn web_search(endpoint: &str, query: &str) -> Result<String, String> {
    let query = query.trim();
    if query.is_empty() {
        return Err("give the words to search for in 'query'".into());
    }
    let url = reqwest::Url::parse_with_params(endpoint, &[("q", query), ("format", "json")])
        .map_err(|e| format!("[tools].search_url '{endpoint}' is not a URL: {e}"))?;
    let (body, _) = get(url.as_str()).await?;
    let found: serde_json::Value = serde_json::from_slice(&body).map_err(|e| {
        format!("the search at {endpoint} did not answer JSON ({e}): [tools].search_url must be a SearXNG-style search with format=json")
    })?;
    let results = found["results"].as_array().cloned().unwrap_or_default();
    if results.is_empty() {
        return Ok(format!("no results for \"{query}\""));
    }
    let mut text = String::new();
    for (i, r) in results.iter().take(RESULTS).enumerate() {
        let field = |k: &str| r[k].as_str().unwrap_or("").trim().to_owned();
        text.push_str(&format!(
            "{}. {} ({})\n{}\n",
            i + 1,
            field("title"),
            field("url"),
            field("content")
        ));
    }
    Ok(capped(text.trim_end(), 0, "the results"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots(dir: &Path) -> Roots {
        Roots::new(&[dir.to_path_buf()])
    }

    #[test]
    fn only_files_under_the_roots_are_read_and_a_refusal_names_the_setting() {
        let dir = tempfile::tempdir().unwrap();
        let docs = dir.path().join("docs");
        std::fs::create_dir_all(docs.join("notes")).unwrap();
        std::fs::write(docs.join("notes/shopping.md"), "# Shopping\n- eggs\n- flour\n").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "the key").unwrap();
        let r = roots(&docs);
        let text = read_file(&r, "notes/shopping.md", 0).unwrap();
        assert_eq!(text, "# Shopping\n- eggs\n- flour\n");
        let abs = docs.join("notes/shopping.md");
        assert_eq!(read_file(&r, abs.to_str().unwrap(), 0).unwrap(), text);
        for outside in ["../secret.txt", dir.path().join("secret.txt").to_str().unwrap()] {
            let why = read_file(&r, outside, 0).unwrap_err();
            assert!(why.contains("[tools].document_roots") && why.contains("outside"), "{why}");
        }
        // A link inside that leads out is outside too.
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), docs.join("link.txt")).unwrap();
        assert!(read_file(&r, "link.txt", 0).unwrap_err().contains("outside"));
        let none = read_file(&Roots::default(), "notes/shopping.md", 0).unwrap_err();
        assert!(none.contains("[tools].document_roots"), "{none}");
        assert!(read_file(&r, "nope.md", 0).unwrap_err().contains("cannot open"));
        // Asked in a folder it is not in: the one file of that name under the roots.
        assert_eq!(read_file(&r, "shopping.md", 0).unwrap(), text);
        assert_eq!(read_file(&r, "lists/shopping.md", 0).unwrap(), text);
        std::fs::create_dir(docs.join("old")).unwrap();
        std::fs::write(docs.join("old/shopping.md"), "- milk\n").unwrap();
        let two = read_file(&r, "shopping.md", 0).unwrap_err();
        assert!(two.contains("files of that name") && two.contains("old/shopping.md"), "{two}");
        // A name outside the roots is never found by name.
        assert!(read_file(&r, "secret.txt", 0).unwrap_err().contains("cannot open"));
        assert!(read_file(&r, "notes", 0).unwrap_err().contains("list_dir"));
    }

    #[test]
    fn a_folder_lists_folders_first_without_hidden_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("b-folder")).unwrap();
        std::fs::write(dir.path().join("a.txt"), "12345").unwrap();
        std::fs::write(dir.path().join(".hidden"), "x").unwrap();
        let listed = list_dir(&roots(dir.path()), "").unwrap();
        let lines: Vec<&str> = listed.lines().skip(1).collect();
        assert_eq!(lines, ["b-folder/", "a.txt (5 B)"]);
    }

    #[test]
    fn long_text_is_cut_with_where_to_read_on() {
        let text = "x".repeat(MAX_CHARS + 10);
        let first = capped(&text, 0, "f.txt");
        assert!(
            first.ends_with(&format!("read on with offset {MAX_CHARS})")),
            "{}",
            &first[MAX_CHARS..]
        );
        let rest = capped(&text, MAX_CHARS, "f.txt");
        assert!(rest.starts_with("xxxxxxxxxx\n(cut: characters 12000 to 12010 of 12010"), "{rest}");
        assert_eq!(capped("short", 0, "f"), "short");
        assert!(capped("short", 9, "f").contains("nothing from 9 on"));
    }

    #[test]
    fn a_docx_and_a_pdf_are_read_as_text_and_binary_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let docx = dir.path().join("letter.docx");
        let file = std::fs::File::create(&docx).unwrap();
        docx_rs::Docx::new()
            .add_paragraph(
                docx_rs::Paragraph::new().add_run(docx_rs::Run::new().add_text("Dear Efren,")),
            )
            .add_paragraph(
                docx_rs::Paragraph::new()
                    .add_run(docx_rs::Run::new().add_text("the meeting moves to Friday.")),
            )
            .build()
            .pack(file)
            .unwrap();
        let r = roots(dir.path());
        assert_eq!(
            read_file(&r, "letter.docx", 0).unwrap(),
            "Dear Efren,\nthe meeting moves to Friday."
        );

        std::fs::write(dir.path().join("report.pdf"), pdf_with("The invoice is due on Friday"))
            .unwrap();
        let text = read_file(&r, "report.pdf", 0).unwrap();
        assert!(text.contains("The invoice is due on Friday"), "{text:?}");
        std::fs::write(dir.path().join("broken.pdf"), b"%PDF-1.4 not really").unwrap();
        assert!(read_file(&r, "broken.pdf", 0).unwrap_err().contains("cannot read the PDF"));

        std::fs::write(dir.path().join("blob.bin"), [0u8, 1, 2, 3]).unwrap();
        assert!(read_file(&r, "blob.bin", 0).unwrap_err().contains("not text"));
    }

    #[tokio::test]
    async fn a_web_page_is_read_as_text_and_each_failure_says_why() {
        let html =
            b"<!doctype html><html><head><title>Trains</title><script>var x = 1;</script></head>\
            <body><h1>Timetable</h1><p>The 8:15 to Leeds leaves from platform 4.</p></body></html>";
        let big = vec![b'a'; MAX_PAGE_BYTES + 10_000];
        let server = stt_testkit::web::WebServer::start(vec![
            ("/trains", "text/html; charset=utf-8", html.to_vec()),
            ("/plain", "text/plain", b"just words".to_vec()),
            ("/photo", "image/png", vec![0x89, b'P', b'N', b'G']),
            ("/big", "text/plain", big),
        ]);
        let base = server.url();
        let page = fetch_web(&format!("{base}/trains")).await.unwrap();
        assert!(page.contains("Timetable") && page.contains("platform 4"), "{page}");
        assert!(!page.contains("<p>") && !page.contains("var x"), "{page}");
        assert_eq!(fetch_web(&format!("{base}/plain")).await.unwrap(), "just words");
        let why = fetch_web(&format!("{base}/photo")).await.unwrap_err();
        assert!(why.contains("not a text page (image/png)"), "{why}");
        assert!(fetch_web(&format!("{base}/gone")).await.unwrap_err().contains("404"));
        let big = fetch_web(&format!("{base}/big")).await.unwrap();
        assert!(
            big.ends_with(&format!("read on with offset {MAX_CHARS})")),
            "{}",
            &big[MAX_CHARS..]
        );
        assert!(fetch_web("file:///etc/passwd").await.unwrap_err().contains("not a web address"));
        // A port nobody listens on.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let dead = fetch_web(&format!("http://{closed}/")).await.unwrap_err();
        assert!(dead.starts_with("cannot fetch"), "{dead}");
        if !cfg!(feature = "https") {
            let tls = fetch_web("https://127.0.0.1:9/").await.unwrap_err();
            assert!(tls.contains("--features https"), "{tls}");
        }
    }

    #[tokio::test]
    async fn a_search_lists_the_first_results_with_their_links() {
        let results = serde_json::json!({"results": [
            {"title": "The Rust Book", "url": "https://doc.rust-lang.org/book/", "content": "Learn Rust."},
            {"title": "Rust by Example", "url": "https://doc.rust-lang.org/rust-by-example/", "content": "Examples."}
        ]});
        let server = stt_testkit::web::WebServer::start(vec![
            ("/search", "application/json", results.to_string().into_bytes()),
            ("/html", "text/html", b"<html>not json</html>".to_vec()),
        ]);
        let base = server.url();
        let found = web_search(&format!("{base}/search"), "rust book").await.unwrap();
        assert!(found.starts_with("1. The Rust Book (https://doc.rust-lang.org/book/)\nLearn Rust.\n2. Rust by Example"), "{found}");
        assert_eq!(server.asked()[0], "/search?q=rust+book&format=json");
        let why = web_search(&format!("{base}/html"), "rust").await.unwrap_err();
        assert!(why.contains("SearXNG"), "{why}");
        assert!(web_search(&format!("{base}/search"), " ").await.unwrap_err().contains("query"));
    }

    /// A one-page PDF showing `text` in Helvetica, its cross-reference table counted here.
    pub(crate) fn pdf_with(text: &str) -> Vec<u8> {
        let stream = format!("BT /F1 18 Tf 50 700 Td ({text}) Tj ET");
        let objects = [
            "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
            "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_owned(),
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>".to_owned(),
            format!("<< /Length {} >>\nstream\n{stream}\nendstream", stream.len()),
            "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".to_owned(),
        ];
        let mut pdf = b"%PDF-1.4\n".to_vec();
        let mut offsets = Vec::new();
        for (i, object) in objects.iter().enumerate() {
            offsets.push(pdf.len());
            pdf.extend_from_slice(format!("{} 0 obj\n{object}\nendobj\n", i + 1).as_bytes());
        }
        let xref = pdf.len();
        pdf.extend_from_slice(
            format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
        );
        for offset in offsets {
            pdf.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
        }
        pdf.extend_from_slice(
            format!(
                "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
                objects.len() + 1
            )
            .as_bytes(),
        );
        pdf
    }
}

//! Profiling in a browser: programs of ../shared/corpus that read no file, instrumented with
//! `pathprof instrument`, run in headless Chromium by a test page (`tests/browser/page.html`) with
//! pathprof's JavaScript host and a minimal in-page WASI (`tests/browser/wasi-shim.mjs`), posted
//! back to a server of the test's own and decoded with `pathprof decode`, give the profile
//! `pathprof run` gives, in `bl`, `kbl`, `events`, `ippp` (segments of one and of two calls) and
//! `ppp` (half the paths interesting, the others counted by the host); the programs print what they
//! should.
//!
//! Skipped, with a message, when Chromium or the corpus is absent — unless
//! `PATHPROF_REQUIRE_BROWSER` is set (as CI sets it once it has installed Chromium).

mod common;

use common::elsewhere::{half_interesting, js, Case};
use common::{browser, corpus_dir, headless};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Corpus programs that read no file and whose paths do not vary from run to run.
const PROGRAMS: &[&str] = &["shootout/shootout-gimli.wasm", "shootout/shootout-ratelimit.wasm"];
const MODES: &[&str] = &["bl", "kbl:4", "events", "ippp", "ippp:2"];
/// The longest the page may take for all the cases.
const PAGE_LIMIT: Duration = Duration::from_secs(120);

/// A request the page sent: its method, path and body.
struct Request {
    method: String,
    path: String,
    body: Vec<u8>,
}

fn read_request(stream: &mut TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_string(), parts.next()?.to_string());
    let mut length = 0;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request { method, path, body })
}

fn respond(stream: &mut TcpStream, status: &str, kind: &str, body: &[u8]) {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body));
}

/// Serves `files` (path → content type and file) and hands over every POST until `/done`.
fn serve(listener: TcpListener, files: HashMap<String, (&'static str, PathBuf)>, posts: mpsc::Sender<Request>) {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        let Some(request) = read_request(&mut stream) else { continue };
        if request.method == "POST" {
            respond(&mut stream, "200 OK", "text/plain", b"");
            let done = request.path == "/done";
            if posts.send(request).is_err() || done {
                return;
            }
            continue;
        }
        match files.get(&request.path) {
            Some((kind, file)) => respond(&mut stream, "200 OK", kind, &std::fs::read(file).unwrap()),
            None => respond(&mut stream, "404 Not Found", "text/plain", b"not found"),
        }
    }
}

fn page_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser").join(name)
}

#[test]
fn browser_profiles_equal_embedded_ones() {
    let Some(chromium) = browser() else {
        eprintln!("skipped: no headless browser");
        return;
    };
    let Some(corpus) = corpus_dir() else {
        eprintln!("skipped: ../shared/corpus is absent");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let mut cases = Vec::new();
    for (i, program) in PROGRAMS.iter().enumerate() {
        let wasm = corpus.join(program);
        cases.extend(MODES.iter().map(|m| Case::new(&wasm, m, None, 0)));
        let half = tmp.path().join(i.to_string());
        std::fs::create_dir(&half).unwrap();
        cases.push(Case::new(&wasm, "ppp", Some(&half_interesting(&wasm, &half)), 0));
    }
    let mut files: HashMap<String, (&'static str, PathBuf)> = HashMap::from([
        ("/".to_string(), ("text/html", page_file("page.html"))),
        ("/wasi-shim.mjs".to_string(), ("text/javascript", page_file("wasi-shim.mjs"))),
        ("/host.mjs".to_string(), ("text/javascript", js("pathprof-host.mjs"))),
        ("/cases.json".to_string(), ("application/json", tmp.path().join("cases.json"))),
    ]);
    let mut listed = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        files.insert(format!("/case/{i}.wasm"), ("application/wasm", case.instrumented.clone()));
        files.insert(format!("/case/{i}.map.json"), ("application/json", case.map.clone()));
        let program = case.wasm.file_name().unwrap().to_string_lossy().into_owned();
        listed.push(serde_json::json!({
            "module": format!("/case/{i}.wasm"),
            "map": format!("/case/{i}.map.json"),
            "args": [program],
        }));
    }
    std::fs::write(tmp.path().join("cases.json"), serde_json::Value::Array(listed).to_string()).unwrap();

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (sender, posts) = mpsc::channel();
    std::thread::spawn(move || serve(listener, files, sender));
    let profile_dir = tempfile::tempdir().unwrap();
    let mut chromium = headless(&chromium, profile_dir.path())
        .arg(format!("http://127.0.0.1:{port}/"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut stdouts: HashMap<usize, Vec<u8>> = HashMap::new();
    let outcome = loop {
        let left = PAGE_LIMIT.saturating_sub(started.elapsed());
        let Ok(post) = posts.recv_timeout(left) else {
            break Err(format!("no answer from the page in {PAGE_LIMIT:?}"));
        };
        if post.path == "/done" {
            break Ok(String::from_utf8_lossy(&post.body).into_owned());
        }
        let (kind, index) = post.path.trim_start_matches('/').split_once('/').unwrap();
        let index: usize = index.parse().unwrap();
        match kind {
            "stdout" => drop(stdouts.insert(index, post.body)),
            "dump" => std::fs::write(cases[index].dump(), &post.body).unwrap(),
            other => panic!("the page posted {other}"),
        }
    };
    let _ = chromium.kill();
    let _ = chromium.wait();
    assert_eq!(outcome.as_deref(), Ok("ok"), "the page");
    for (i, case) in cases.iter().enumerate() {
        case.same_as_run(&stdouts[&i]);
    }
}

//! The dashboard against a hostile client on the same machine (issue 29): idle connections past
//! its limit (under a small `ulimit -n`, as 1,050 idle connections under 1,024 had made it
//! unreachable) and a client sending a byte at a time do not keep a page from being served;
//! only the hosts it listens as are answered (no DNS rebinding); every response carries the
//! security headers.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::Lab;

/// `scalelab serve` under `ulimit -n FILES`, stopped when dropped; `stderr` keeps what it
/// printed after the address line.
struct Server {
    child: Child,
    /// `127.0.0.1:PORT`.
    addr: String,
    first_lines: Vec<String>,
}

impl Server {
    fn start(lab: &Lab, files: u32, args: &[&str]) -> Server {
        let program = lab.cmd().get_program().to_owned();
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!(r#"ulimit -n {files}; exec "$@""#))
            .arg("sh")
            .arg(program)
            .args(["--db", lab.db().to_str().unwrap(), "serve"])
            .args(args)
            .current_dir(lab.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        let addr = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("http://"))
            .unwrap_or_else(|| panic!("no address in: {line}"))
            .trim_end_matches('/')
            .to_owned();
        let mut first_lines = vec![line];
        // A warning, when there is one, follows at once.
        if args.iter().any(|a| a.starts_with("0.0.0.0")) {
            let mut more = String::new();
            stderr.read_line(&mut more).unwrap();
            first_lines.push(more);
        }
        // The rest is drained, so that the server never blocks on a full pipe.
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut stderr, &mut std::io::sink());
        });
        Server {
            child,
            addr,
            first_lines,
        }
    }

    /// `GET path` with `Host: host`: the status line, headers and body.
    fn get(&self, path: &str, host: &str) -> String {
        request(
            &self.addr,
            &format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn request(addr: &str, text: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(text.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Was: under `ulimit -n 1024`, 1,050 idle connections made the dashboard unreachable (a GET
/// timed out, all still open after 46 s), and a client sending one byte a second was never
/// dropped.
#[test]
fn idle_and_slow_clients_past_the_limit_do_not_keep_a_page_from_being_served() {
    let lab = Lab::new();
    lab.short_spin(&[]);
    let server = Server::start(&lab, 64, &["--listen", "127.0.0.1:0", "--timeout", "1s"]);
    let idle: Vec<TcpStream> = (0..100)
        .filter_map(|_| TcpStream::connect(&server.addr).ok())
        .collect();
    assert!(idle.len() >= 64, "only {} connections made", idle.len());
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    let page = server.get("/run/1", &server.addr);
    let took = started.elapsed();
    assert!(
        page.starts_with("HTTP/1.1 200"),
        "{}",
        &page[..page.len().min(300)]
    );
    assert!(
        took < Duration::from_secs(1),
        "a page took {took:?} beside {} idle connections",
        idle.len()
    );
    // A client sending its request a byte at a time is dropped after --timeout.
    let mut slow = TcpStream::connect(&server.addr).unwrap();
    let started = Instant::now();
    let dropped = b"GET / HTTP/1.1\r\nHost: x\r\n".iter().any(|b| {
        std::thread::sleep(Duration::from_millis(250));
        slow.write_all(&[*b]).is_err()
    });
    assert!(
        dropped,
        "a slow client was still connected after {:?}",
        started.elapsed()
    );
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    drop(idle);
}

/// Was: any `Host` was answered (`curl -H 'Host: evil.example' …/run/2` → 200), so a
/// DNS-rebinding page could read every run; `--listen localhost:P` was refused; a 405 carried
/// no security header; every page allowed inline scripts, though only a flame graph's frame
/// runs one.
#[test]
fn only_the_hosts_it_listens_as_are_answered_and_every_response_is_guarded() {
    let lab = Lab::new();
    lab.short_spin(&[]);
    let server = Server::start(
        &lab,
        1024,
        &["--listen", "localhost:0", "--allowed-host", "lab.example"],
    );
    let port = server.addr.rsplit(':').next().unwrap().to_owned();
    for (host, status) in [
        (format!("evil.example:{port}"), "421"),
        (format!("127.0.0.1:{port}"), "200"),
        (format!("localhost:{port}"), "200"),
        (format!("lab.example:{port}"), "200"),
        ("localhost:1".to_owned(), "421"),
    ] {
        let page = server.get("/run/1", &host);
        assert!(
            page.starts_with(&format!("HTTP/1.1 {status}")),
            "{host}: {}",
            &page[..page.len().min(200)]
        );
    }
    let post = request(
        &server.addr,
        &format!(
            "POST / HTTP/1.1\r\nHost: {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            server.addr
        ),
    );
    for response in [
        server.get("/run/1", &server.addr),
        server.get("/nope", &server.addr),
        server.get("/", "evil.example"),
        post,
    ] {
        let head = response
            .split("\r\n\r\n")
            .next()
            .unwrap()
            .to_ascii_lowercase();
        for header in [
            "content-security-policy: default-src 'none';",
            "script-src 'none'",
            "frame-ancestors 'none'",
            "x-content-type-options: nosniff",
            "cache-control: no-store",
        ] {
            assert!(head.contains(header), "no {header} in:\n{head}");
        }
    }
    // Beyond loopback it says that anyone who reaches it reads every run.
    let open = Server::start(&lab, 1024, &["--listen", "0.0.0.0:0"]);
    let said = open.first_lines.concat();
    assert!(said.contains("the dashboard is unauthenticated"), "{said}");
}

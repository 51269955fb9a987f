//! Headless Chromium driven as a reader would drive it: open a page, click at an element's
//! place with the mouse, wait for the page a click leads to, read its text — over the DevTools
//! protocol on `--remote-debugging-pipe` (JSON messages ended by NUL, the browser reading fd 3
//! and writing fd 4), no client crate and no script in the page: the two descriptors are named
//! pipes a shell opens for it. Every console message and log entry the pages produce is kept,
//! so a test can require that there is none.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::report::chromium;

/// How long one protocol call, or a page's load, may take.
const PATIENCE: Duration = Duration::from_secs(30);

/// One headless Chromium with one page, stopped when dropped.
pub(crate) struct Browser {
    child: Child,
    to: std::fs::File,
    from: Receiver<Value>,
    next_id: u64,
    session: String,
    /// Console messages, exceptions and log entries, as the protocol gave them.
    pub(crate) console: Vec<Value>,
}

impl Browser {
    /// Starts Chromium (its profile and pipes under `dir`) with one blank page attached.
    pub(crate) fn start(dir: &Path) -> Browser {
        let (to_browser, from_browser) = (dir.join("cdp-in"), dir.join("cdp-out"));
        for fifo in [&to_browser, &from_browser] {
            let made = Command::new("mkfifo").arg(fifo).status().unwrap();
            assert!(made.success(), "mkfifo {}", fifo.display());
        }
        let script = format!(
            "exec {} --headless --no-sandbox --disable-gpu --no-first-run \
             --disable-background-networking --disable-component-update --disable-sync \
             --hide-scrollbars --window-size=1600,1200 --user-data-dir={} \
             --remote-debugging-pipe about:blank 3<{} 4>{}",
            chromium(),
            dir.join("cdp-profile").display(),
            to_browser.display(),
            from_browser.display()
        );
        let child = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // In the shell's order: its fd 3 first, then its fd 4 (each open waits for the other end).
        let to = std::fs::OpenOptions::new()
            .write(true)
            .open(&to_browser)
            .unwrap();
        let from = std::fs::File::open(&from_browser).unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(from);
            let mut message = Vec::new();
            while reader.read_until(0, &mut message).is_ok_and(|n| n > 0) {
                if message.last() == Some(&0) {
                    message.pop();
                }
                if let Ok(v) = serde_json::from_slice::<Value>(&message) {
                    if tx.send(v).is_err() {
                        return;
                    }
                }
                message.clear();
            }
        });
        let mut browser = Browser {
            child,
            to,
            from: rx,
            next_id: 0,
            session: String::new(),
            console: Vec::new(),
        };
        let target = browser.call("Target.createTarget", json!({"url": "about:blank"}));
        let target = target["targetId"].as_str().unwrap().to_owned();
        let attached = browser.call(
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
        );
        browser.session = attached["sessionId"].as_str().unwrap().to_owned();
        for domain in ["Page.enable", "Runtime.enable", "Log.enable"] {
            browser.call(domain, json!({}));
        }
        browser
    }

    /// Sends `method` (to the page once one is attached) and waits for its result.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).unwrap();
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let got = match self.from.recv_timeout(left) {
                Ok(got) => got,
                Err(RecvTimeoutError::Timeout) => panic!("Chromium did not answer {method}"),
                Err(RecvTimeoutError::Disconnected) => panic!("Chromium exited during {method}"),
            };
            if got["id"] == id {
                assert!(got["error"].is_null(), "{method}: {got}");
                return got["result"].clone();
            }
            self.keep(got);
        }
    }

    /// Keeps an event that is a console message, an uncaught exception or a log entry.
    fn keep(&mut self, event: Value) {
        let method = event["method"].as_str().unwrap_or_default();
        if matches!(
            method,
            "Runtime.consoleAPICalled" | "Runtime.exceptionThrown" | "Log.entryAdded"
        ) {
            self.console.push(event);
        }
    }

    /// `expression`'s value in the page (returned by value).
    pub(crate) fn eval(&mut self, expression: &str) -> Value {
        let got = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
        );
        assert!(
            got["exceptionDetails"].is_null(),
            "{expression}: {}",
            got["exceptionDetails"]
        );
        got["result"]["value"].clone()
    }

    /// Opens `url` and waits until it has loaded.
    pub(crate) fn open(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url}));
        self.wait_for(url, |href| href.starts_with(url));
    }

    /// Waits until the page's address satisfies `wanted` and the page has loaded; its address.
    pub(crate) fn wait_for(&mut self, what: &str, wanted: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let state = self.eval("[location.href, document.readyState]");
            let href = state[0].as_str().unwrap_or_default().to_owned();
            if wanted(&href) && state[1] == "complete" {
                return href;
            }
            assert!(Instant::now() < deadline, "no {what}: still at {href}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Types `text` into the element that has the focus, as a keyboard would.
    pub(crate) fn type_text(&mut self, text: &str) {
        self.call("Input.insertText", json!({ "text": text }));
    }

    /// Clicks the middle of the element `selector` selects with the mouse's left button.
    pub(crate) fn click(&mut self, selector: &str) {
        let quoted = serde_json::to_string(selector).unwrap();
        let place = self.eval(&format!(
            "(() => {{ const e = document.querySelector({quoted}); if (!e) return null; \
             e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect(); \
             return [r.x + r.width / 2, r.y + r.height / 2]; }})()"
        ));
        assert!(place.is_array(), "no {selector} on the page");
        let (x, y) = (place[0].as_f64().unwrap(), place[1].as_f64().unwrap());
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            );
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Asked to close, Chromium takes its helper processes with it.
        let _ = self
            .to
            .write_all(b"{\"id\":0,\"method\":\"Browser.close\"}\0");
        std::thread::sleep(Duration::from_millis(300));
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

//! A `redis-server` of the test's own, on a free loopback port in a
//! temporary directory, stopped when dropped.
//!
//! Where `redis-server` is not installed, [`Server::start`] returns `None`
//! after a notice, and the test passes without it; in CI (`CI=true`) it
//! fails instead, since `.ci/run` installs it.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `redis-server`.
pub struct Server {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
    durable: bool,
}

impl Server {
    /// Starts one, or says why not: `None` (after a notice) where
    /// `redis-server` is missing outside CI.
    ///
    /// # Panics
    ///
    /// In CI when `redis-server` is missing, or anywhere when it does not
    /// answer within 10 s.
    pub fn start() -> Option<Server> {
        Server::start_with(true)
    }

    /// As [`Server::start`], keeping nothing on disk: what a benchmark
    /// measures is the round trip, not the disk's `fsync`.
    pub fn start_in_memory() -> Option<Server> {
        Server::start_with(false)
    }

    fn start_with(durable: bool) -> Option<Server> {
        if Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_err()
        {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("redis-server is not installed, and CI requires the Redis tests: .ci/run installs it");
            }
            eprintln!("notice: redis-server is not installed; the Redis tests did not run");
            return None;
        }
        let port = free_port();
        let dir = std::env::temp_dir().join(format!(
            "toolgate-redis-{}-{port}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        std::fs::create_dir_all(&dir).expect("a temporary directory for redis-server");
        let mut s = Server {
            child: None,
            port,
            dir,
            durable,
        };
        s.spawn();
        Some(s)
    }

    fn spawn(&mut self) {
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            // Durable: every acknowledged write is on disk before the
            // answer, so a server killed and restarted has lost nothing it
            // admitted.
            .args(["--save", "", "--appendfsync", "always", "--appendonly"])
            .arg(if self.durable { "yes" } else { "no" })
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "redis-server did not listen on 127.0.0.1:{} within 10 s",
            self.port
        );
    }

    /// Its URL, database 0.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops it at once (`SIGKILL`); what it acknowledged is on disk.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again on the same port, with the data it had.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

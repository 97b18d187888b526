//! `toolgate serve` on loopback, in one run:
//!
//! 1. `/v1/decide` against `/health/live` (the floor of the HTTP stack) over
//!    HTTP/1.1 keep-alive at several concurrencies, a bounded number of
//!    requests each, in [`ROUNDS`] alternating rounds: the medians of
//!    throughput, p50, p99 and the rounds' ratios;
//! 2. the same at 64 connections paced to a steady rate below saturation,
//!    latency counted from when each request was due;
//! 3. the 100k-rule artifact against the 1k-rule one at the highest
//!    concurrency;
//! 4. the resident hook (`hook claude-code --connect`) against the command
//!    hook, end to end as processes, when a `toolgate` binary is given.
//!
//! Usage: `cargo run --release --manifest-path bench/serve/Cargo.toml --
//! [REQUESTS] [TOOLGATE_BINARY]`. Loopback only; every loop is bounded.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use toolgate::open::{open, Format, Opened};
use toolgate_server::{Addr, Config, Source};
use toolgate_testing::workload::Workload;

type Fail = Box<dyn std::error::Error>;

/// Rounds of the floor and the decisions, in turn, per concurrency.
const ROUNDS: usize = 5;

/// The steady rate of the paced row, requests a second over all its
/// connections: about a quarter of what the floor answers at full speed
/// on the 2-core development machine.
const PACED_RATE: f64 = 20_000.0;

struct Run {
    rps: f64,
    p50: Duration,
    p99: Duration,
}

/// One request as bytes, ready to write.
fn request(method: &str, path: &str, body: &str) -> Vec<u8> {
    format!(
        "{method} {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Reads one response off a keep-alive connection; its status.
fn response(r: &mut BufReader<TcpStream>, body: &mut Vec<u8>) -> Result<u16, Fail> {
    let mut line = String::new();
    r.read_line(&mut line)?;
    let status: u16 = line.split(' ').nth(1).ok_or("no status")?.parse()?;
    let mut length = 0usize;
    loop {
        line.clear();
        r.read_line(&mut line)?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse()?;
            }
        }
    }
    body.resize(length, 0);
    r.read_exact(body)?;
    Ok(status)
}

/// `total` requests over `conns` keep-alive connections, each connection
/// sending its share one after another, as fast as answers come back.
fn drive(addr: SocketAddr, conns: usize, total: usize, bodies: &[Vec<u8>]) -> Result<Run, Fail> {
    drive_at(addr, conns, total, bodies, None)
}

/// As [`drive`], at `rate` requests a second in all when one is given:
/// each connection sends on a fixed schedule, phased against the others,
/// and a request's latency counts from when it was due, so a server (or a
/// client) running late shows in it rather than slowing the schedule.
fn drive_at(
    addr: SocketAddr,
    conns: usize,
    total: usize,
    bodies: &[Vec<u8>],
    rate: Option<f64>,
) -> Result<Run, Fail> {
    let per = total / conns;
    let interval = rate.map(|r| Duration::from_secs_f64(conns as f64 / r));
    let start = Instant::now();
    let threads: Vec<_> = (0..conns)
        .map(|c| {
            let bodies: Vec<Vec<u8>> = bodies.to_vec();
            std::thread::spawn(move || -> Result<Vec<Duration>, String> {
                let s = TcpStream::connect(addr).map_err(|e| e.to_string())?;
                s.set_nodelay(true).map_err(|e| e.to_string())?;
                s.set_read_timeout(Some(Duration::from_secs(10)))
                    .map_err(|e| e.to_string())?;
                let mut w = s.try_clone().map_err(|e| e.to_string())?;
                let mut r = BufReader::new(s);
                let mut body = Vec::new();
                let mut lat = Vec::with_capacity(per);
                let phase = interval.map(|i| i.mul_f64(c as f64 / conns as f64));
                for i in 0..per {
                    let req = bodies
                        .get((c * 7919 + i) % bodies.len())
                        .ok_or("no request")?;
                    let t = match (interval, phase) {
                        (Some(every), Some(phase)) => {
                            let due = start + phase + every * u32::try_from(i).unwrap_or(u32::MAX);
                            std::thread::sleep(due.saturating_duration_since(Instant::now()));
                            due
                        }
                        _ => Instant::now(),
                    };
                    w.write_all(req).map_err(|e| e.to_string())?;
                    let status = response(&mut r, &mut body).map_err(|e| e.to_string())?;
                    lat.push(t.elapsed());
                    if status != 200 {
                        return Err(format!("status {status}"));
                    }
                }
                Ok(lat)
            })
        })
        .collect();
    let mut all = Vec::with_capacity(total);
    for t in threads {
        all.extend(t.join().map_err(|_| "a client thread panicked")??);
    }
    let elapsed = start.elapsed();
    all.sort_unstable();
    let at = |q: f64| {
        all.get(((all.len() as f64 * q) as usize).min(all.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    Ok(Run {
        rps: all.len() as f64 / elapsed.as_secs_f64(),
        p50: at(0.50),
        p99: at(0.99),
    })
}

fn us(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

fn serve(
    rt: &tokio::runtime::Runtime,
    path: &std::path::Path,
) -> Result<(toolgate_server::Running, SocketAddr), Fail> {
    let mut c = Config::new(Source::Bundle(path.to_path_buf()));
    c.listen = vec![Addr::parse("127.0.0.1:0")?];
    c.watch = false;
    let running = rt.block_on(toolgate_server::start(c))?;
    let Some(Addr::Tcp(addr)) = running.listening.first().cloned() else {
        return Err("no TCP listener".into());
    };
    Ok((running, addr))
}

fn artifact(doc: &[u8]) -> Result<Vec<u8>, Fail> {
    Ok(match open(doc, Format::Detect)? {
        Opened::Rules(e) | Opened::ClaudeCode(e) => e.to_bytes(),
        _ => return Err("not rule lists".into()),
    })
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// Runs the hook `n` times with `args`; the median wall time of one run.
fn hook_runs(
    bin: &str,
    args: &[&str],
    payload: &str,
    home: &std::path::Path,
    n: usize,
) -> Result<Duration, Fail> {
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let mut child = std::process::Command::new(bin)
            .args(args)
            .env("HOME", home)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()?;
        child
            .stdin
            .take()
            .ok_or("no stdin")?
            .write_all(payload.as_bytes())?;
        let out = child.wait_with_output()?;
        times.push(t.elapsed());
        if !String::from_utf8_lossy(&out.stdout).contains("permissionDecision") {
            return Err("the hook gave no answer".into());
        }
    }
    Ok(median(times))
}

fn main() -> Result<(), Fail> {
    let mut args = std::env::args().skip(1);
    let total: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let bin = args.next();
    let dir = std::env::temp_dir().join(format!("toolgate-serve-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;

    let small = Workload::generate(1_000, 2_000, 42);
    let big = Workload::generate(100_000, 2_000, 42);
    let small_path = dir.join("rules-1k.tgb");
    let big_path = dir.join("rules-100k.tgb");
    std::fs::write(
        &small_path,
        artifact(small.document.to_string().as_bytes())?,
    )?;
    std::fs::write(&big_path, artifact(big.document.to_string().as_bytes())?)?;
    let decide_bodies = |w: &Workload| -> Vec<Vec<u8>> {
        w.calls_jsonl()
            .lines()
            .map(|l| request("POST", "/v1/decide", l))
            .collect()
    };
    let health = vec![request("GET", "/health/live", "")];

    println!("requests per run: {total}; {ROUNDS} rounds of the floor and the decisions in turn, medians (each round's ratio in brackets); server: 2 worker threads; clients on the same 2 cores\n");
    println!("| connections | `/health/live` req/s | `/v1/decide` req/s | decide / floor | decide p50 | decide p99 | floor p99 |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    let (running, addr) = serve(&rt, &small_path)?;
    let small_bodies = decide_bodies(&small);
    let mut at64 = None;
    for conns in [1usize, 8, 64] {
        // Rounds of the floor and the decisions in turn: on a shared
        // machine one pair of runs moves by 15%, the median of the rounds'
        // ratios far less.
        let mut rounds = Vec::with_capacity(ROUNDS);
        for _ in 0..ROUNDS {
            let floor = drive(addr, conns, total, &health)?;
            let d = drive(addr, conns, total, &small_bodies)?;
            rounds.push((floor, d));
        }
        let mid = |f: &dyn Fn(&(Run, Run)) -> f64| {
            let mut v: Vec<f64> = rounds.iter().map(f).collect();
            v.sort_unstable_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or_default()
        };
        let d = Run {
            rps: mid(&|r| r.1.rps),
            p50: Duration::from_secs_f64(mid(&|r| r.1.p50.as_secs_f64())),
            p99: Duration::from_secs_f64(mid(&|r| r.1.p99.as_secs_f64())),
        };
        let ratios: Vec<String> = rounds
            .iter()
            .map(|(f, d)| format!("{:.0}", 100.0 * d.rps / f.rps))
            .collect();
        println!(
            "| {conns} | {:.0} | {:.0} | {:.0}% ({}) | {} | {} | {} |",
            mid(&|r| r.0.rps),
            d.rps,
            mid(&|r| 100.0 * r.1.rps / r.0.rps),
            ratios.join(", "),
            us(d.p50),
            us(d.p99),
            us(Duration::from_secs_f64(mid(&|r| r.0.p99.as_secs_f64())))
        );
        if conns == 64 {
            at64 = Some(d);
        }
    }
    // The same 64 connections below saturation: a closed loop at full
    // speed measures the queue (64 requests in flight over the throughput,
    // about 1 ms here, before any work), a gateway at a steady rate sees
    // this.
    println!("\n| 64 connections at {PACED_RATE} req/s in all | `/health/live` p50 | p99 | `/v1/decide` p50 | p99 |");
    println!("| --- | --- | --- | --- | --- |");
    let mut paced = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let floor = drive_at(addr, 64, PACED_RATE as usize, &health, Some(PACED_RATE))?;
        let d = drive_at(
            addr,
            64,
            PACED_RATE as usize,
            &small_bodies,
            Some(PACED_RATE),
        )?;
        paced.push((floor, d));
    }
    let mid = |f: &dyn Fn(&(Run, Run)) -> Duration| median(paced.iter().map(f).collect());
    println!(
        "| medians of {ROUNDS} rounds (mean rates achieved {:.0} and {:.0} req/s) | {} | {} | {} | {} |",
        paced.iter().map(|r| r.0.rps).sum::<f64>() / ROUNDS as f64,
        paced.iter().map(|r| r.1.rps).sum::<f64>() / ROUNDS as f64,
        us(mid(&|r| r.0.p50)),
        us(mid(&|r| r.0.p99)),
        us(mid(&|r| r.1.p50)),
        us(mid(&|r| r.1.p99)),
    );
    rt.block_on(running.shutdown());

    let (running, addr) = serve(&rt, &big_path)?;
    let b = drive(addr, 64, total, &decide_bodies(&big))?;
    rt.block_on(running.shutdown());
    if let Some(s) = at64 {
        println!("\n| artifact (64 connections) | `/v1/decide` req/s | p50 | p99 |");
        println!("| --- | --- | --- | --- |");
        println!(
            "| 1k rules | {:.0} | {} | {} |",
            s.rps,
            us(s.p50),
            us(s.p99)
        );
        println!(
            "| 100k rules | {:.0} | {} | {} |",
            b.rps,
            us(b.p50),
            us(b.p99)
        );
        println!("100k / 1k throughput: {:.0}%", 100.0 * b.rps / s.rps);
    }

    if let Some(bin) = bin {
        let home = dir.join("home");
        std::fs::create_dir_all(&home)?;
        let settings = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/settings.json"),
        )?;
        let hook_path = dir.join("settings.tgb");
        std::fs::write(&hook_path, artifact(&settings)?)?;
        let (running, addr) = serve(&rt, &hook_path)?;
        let payload = serde_json::json!({
            "session_id": "s", "cwd": dir, "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": "npm test"}, "tool_use_id": "t"
        })
        .to_string();
        let bundle = hook_path.to_string_lossy().into_owned();
        let connect = addr.to_string();
        let n = 40;
        let command = hook_runs(
            &bin,
            &["hook", "claude-code", "--bundle", &bundle],
            &payload,
            &home,
            n,
        )?;
        let resident = hook_runs(
            &bin,
            &[
                "hook",
                "claude-code",
                "--bundle",
                &bundle,
                "--connect",
                &connect,
            ],
            &payload,
            &home,
            n,
        )?;
        let (_, body) = toolgate_server::client::post(
            &Addr::Tcp(addr),
            "/v1/hooks/claude-code",
            payload.as_bytes(),
            None,
            Duration::from_secs(5),
        )?;
        let mut http = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            toolgate_server::client::post(
                &Addr::Tcp(addr),
                "/v1/hooks/claude-code",
                payload.as_bytes(),
                None,
                Duration::from_secs(5),
            )?;
            http.push(t.elapsed());
        }
        rt.block_on(running.shutdown());
        println!("\n| hook ({n} runs each, median end to end) | latency |");
        println!("| --- | --- |");
        println!("| command hook (`--bundle`) | {} |", us(command));
        println!("| `--connect` to the server | {} |", us(resident));
        println!(
            "| `http` hook (one POST, no process) | {} |",
            us(median(http))
        );
        println!(
            "--connect / command: {:.0}%  (answer: {})",
            100.0 * resident.as_secs_f64() / command.as_secs_f64(),
            String::from_utf8_lossy(&body).trim()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

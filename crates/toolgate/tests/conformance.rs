//! Runs every conformance file on every engine: toolgate's own corpus under
//! `testdata/`, and agentpolicy's public corpus when it is present.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::path::{Path, PathBuf};
use toolgate_reference::conformance::{run_file, EngineKind, Report};

fn engines() -> Vec<EngineKind> {
    match std::env::var("TOOLGATE_ENGINES") {
        Ok(list) => EngineKind::ALL
            .into_iter()
            .filter(|e| list.split(',').any(|n| n == e.name()))
            .collect(),
        Err(_) => EngineKind::ALL.to_vec(),
    }
}

fn run_dir(dir: &Path) -> Report {
    let mut files: Vec<PathBuf> = walk(dir);
    files.sort();
    let mut report = Report::default();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let name = f.display().to_string();
        report.merge(run_file(&name, &text, &engines()).unwrap_or_else(|e| panic!("{e}")));
    }
    report
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            // Golden artifacts are policies and their compiled tables, not
            // conformance files.
            if p.file_name().is_some_and(|n| n == "artifacts") {
                continue;
            }
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
    out
}

fn check(report: &Report, at_least: usize) {
    for f in &report.failures {
        eprintln!("{f}");
    }
    eprintln!("{}", report.summary());
    assert_eq!(report.failed, 0, "{} failures", report.failed);
    assert!(
        report.passed >= at_least,
        "only {} cases ran",
        report.passed
    );
}

#[test]
fn agentpolicy_corpus() {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("../shared/conformance/agentpolicy/testdata/policy");
    if !dir.exists() {
        eprintln!(
            "notice: {} is absent; agentpolicy's corpus was not run",
            dir.display()
        );
        return;
    }
    let report = run_dir(&dir);
    check(&report, 115);
    assert_eq!(report.passed, 115, "the corpus holds 115 cases");
}

#[test]
fn toolgate_corpus() {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("testdata");
    let report = run_dir(&dir);
    check(&report, 100);
}

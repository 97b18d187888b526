//! Hot reload: the artifact's file and the guard file watched (their
//! directories, so that a file renamed over one is seen), debounced,
//! `SIGHUP`, and the reload itself: read into memory, validated whole, then
//! swapped. A file that does not validate is refused with a log line and a
//! count, and the last good artifact keeps serving.

use crate::http::Shared;
use crate::{Loaded, ServeError};
use notify::{RecursiveMode, Watcher};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// Reloads the artifact (and the shadow): the revision served afterwards.
/// Reloads run one at a time, and an artifact whose revision is the one
/// served is not swapped (a watcher sees several events for one write).
pub(crate) async fn reload(state: Arc<Shared>) -> Result<String, ServeError> {
    let _one = state.reloading.lock().await;
    let source = state.source.clone();
    let load = state.load;
    let guards = state.guards.clone();
    let read = tokio::task::spawn_blocking(move || {
        Loaded::read_guarded(&source, guards.as_deref(), &load)
    })
    .await
    .map_err(|e| ServeError::Runtime(e.to_string()))
    .and_then(|r| r);
    if let (Some(slot), Some(source)) = (&state.shadow, state.shadow_source.clone()) {
        let guards = state.guards.clone();
        let shadow = tokio::task::spawn_blocking(move || {
            Loaded::read_guarded(&source, guards.as_deref(), &load)
        })
        .await;
        match shadow {
            Ok(Ok(s)) if s.revision != slot.load().revision => slot.store(Arc::new(s)),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => note!("toolgate serve: the shadow artifact was not reloaded: {e}"),
            Err(e) => note!("toolgate serve: the shadow artifact was not reloaded: {e}"),
        }
    }
    match read {
        Ok(new) => {
            let revision = new.revision.clone();
            if revision != state.current.load().revision {
                state.current.store(Arc::new(new));
                state.generation.fetch_add(1, Ordering::SeqCst);
                state.reloads.fetch_add(1, Ordering::SeqCst);
                state.metrics.reloads.inc();
                note!("toolgate serve: now serving revision {revision}");
            }
            Ok(revision)
        }
        Err(e) => {
            state.failed_reloads.fetch_add(1, Ordering::SeqCst);
            state.metrics.failed_reloads.inc();
            note!(
                "toolgate serve: reload refused, still serving revision {}: {e}",
                state.current.load().revision
            );
            Err(e)
        }
    }
}

/// The file watcher; dropping it stops the watching.
pub(crate) struct Watch {
    _watcher: notify::RecommendedWatcher,
}

/// A file a reload reads, as the watcher follows it.
struct Followed {
    name: Option<std::ffi::OsString>,
    dir: std::path::PathBuf,
    /// Whether it is reached through a symbolic link.
    linked: bool,
    /// The directory of the file the links end at.
    target_dir: Option<std::path::PathBuf>,
}

impl Followed {
    fn of(path: &std::path::Path) -> Result<Followed, ServeError> {
        let path = std::path::absolute(path).map_err(|e| ServeError::Read {
            path: path.display().to_string(),
            why: e.to_string(),
        })?;
        // A file reached through a symbolic link is replaced by swapping a
        // link anywhere on the way (a Kubernetes volume swaps `..data`
        // beside the file, not the file), so every change in its directory
        // is a reason to read it again, and so is a change beside the file
        // the links end at. A read that finds the revision served swaps
        // nothing.
        let linked = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
        Ok(Followed {
            name: path.file_name().map(|n| n.to_os_string()),
            dir: path
                .parent()
                .map_or_else(|| std::path::PathBuf::from("."), |d| d.to_path_buf()),
            linked,
            target_dir: linked
                .then(|| std::fs::canonicalize(&path).ok())
                .flatten()
                .and_then(|t| t.parent().map(std::path::Path::to_path_buf)),
        })
    }
}

/// Watches the directories of the files a reload reads (the artifact, and
/// the guard file when one is given) for changes to them (written in
/// place, created, or renamed in), and reloads once they have been quiet
/// for `debounce`.
pub(crate) fn watch(
    state: Arc<Shared>,
    debounce: Duration,
    mut stop: watch::Receiver<bool>,
) -> Result<Watch, ServeError> {
    let mut followed = vec![Followed::of(state.source.path())?];
    if let Some(g) = &state.guards {
        followed.push(Followed::of(g)?);
    }
    let linked = followed.iter().any(|f| f.linked);
    let names: Vec<std::ffi::OsString> = followed.iter().filter_map(|f| f.name.clone()).collect();
    let mut dirs: Vec<std::path::PathBuf> = Vec::new();
    for f in &followed {
        for d in std::iter::once(&f.dir).chain(f.target_dir.iter()) {
            if !dirs.contains(d) {
                dirs.push(d.clone());
            }
        }
    }
    // One pending event is enough: any number of events before the quiet
    // period ends make one reload.
    let (tx, mut rx) = mpsc::channel::<()>(1);
    let mut watcher = notify::recommended_watcher(move |e: notify::Result<notify::Event>| {
        let Ok(e) = e else { return };
        if e.kind.is_access() {
            return;
        }
        let ours =
            |p: &std::path::PathBuf| p.file_name().is_some_and(|n| names.iter().any(|m| m == n));
        if linked || e.paths.iter().any(ours) {
            let _ = tx.try_send(());
        }
    })
    .map_err(|e| ServeError::Read {
        path: followed
            .first()
            .map(|f| f.dir.display().to_string())
            .unwrap_or_default(),
        why: format!("cannot watch it: {e}"),
    })?;
    for d in &dirs {
        watcher
            .watch(d, RecursiveMode::NonRecursive)
            .map_err(|e| ServeError::Read {
                path: d.display().to_string(),
                why: format!("cannot watch it: {e}"),
            })?;
    }
    tokio::spawn(async move {
        loop {
            tokio::select! {
                got = rx.recv() => if got.is_none() { return },
                _ = stop.changed() => return,
            }
            // Quiet for `debounce`: a writer that writes in pieces, or
            // writes then renames, is read once it is done.
            while let Ok(Some(())) = tokio::time::timeout(debounce, rx.recv()).await {}
            let _ = reload(state.clone()).await;
        }
    });
    Ok(Watch { _watcher: watcher })
}

/// Reloads on every `SIGHUP`.
pub(crate) fn on_sighup(
    state: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) -> Result<tokio::task::JoinHandle<()>, ServeError> {
    let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        .map_err(|e| ServeError::Runtime(format!("cannot handle SIGHUP: {e}")))?;
    Ok(tokio::spawn(async move {
        loop {
            tokio::select! {
                got = hup.recv() => {
                    if got.is_none() { return }
                    let _ = reload(state.clone()).await;
                }
                _ = stop.changed() => return,
            }
        }
    }))
}

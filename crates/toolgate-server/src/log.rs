//! The decision log: one JSON line per decision, written by a thread of its
//! own through a bounded queue. A decision never waits on the log: when
//! the queue is full the entry is dropped and counted.

use crate::ServeError;
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};

/// What a masked argument value is replaced with.
pub const MASKED: &str = "***";

/// The sending side of the log.
pub(crate) struct DecisionLog {
    tx: SyncSender<String>,
    mask: Vec<String>,
}

impl DecisionLog {
    /// Opens `path` for appending and starts the writer thread.
    pub(crate) fn start(
        path: &Path,
        capacity: usize,
        mask: Vec<String>,
    ) -> Result<DecisionLog, ServeError> {
        for m in &mask {
            if !(m.is_empty() || m.starts_with('/')) {
                return Err(ServeError::Mask { pointer: m.clone() });
            }
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| ServeError::Read {
                path: path.display().to_string(),
                why: e.to_string(),
            })?;
        let (tx, rx) = sync_channel(capacity.max(1));
        std::thread::Builder::new()
            .name("toolgate-decision-log".into())
            .spawn(move || write_all(file, rx))
            .map_err(|e| ServeError::Read {
                path: path.display().to_string(),
                why: format!("cannot start the log writer: {e}"),
            })?;
        Ok(DecisionLog { tx, mask })
    }

    /// Queues one entry; `false` when it was dropped (the queue is full, or
    /// the writer stopped).
    pub(crate) fn send(&self, line: String) -> bool {
        match self.tx.try_send(line) {
            Ok(()) => true,
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => false,
        }
    }

    /// The call as logged: every value a mask pointer names replaced, in
    /// each call of a batch.
    pub(crate) fn masked(&self, mut call: Value) -> Value {
        let one = |v: &mut Value| {
            for p in &self.mask {
                if let Some(x) = v.pointer_mut(p) {
                    *x = Value::String(MASKED.into());
                }
            }
        };
        match &mut call {
            Value::Array(calls) => calls.iter_mut().for_each(one),
            c => one(c),
        }
        call
    }
}

/// Writes lines as they come, flushing whenever the queue is empty, until
/// every sender is gone.
fn write_all(file: std::fs::File, rx: Receiver<String>) {
    let mut out = std::io::BufWriter::new(file);
    while let Ok(line) = rx.recv() {
        let _ = out.write_all(line.as_bytes());
        let _ = out.write_all(b"\n");
        while let Ok(line) = rx.try_recv() {
            let _ = out.write_all(line.as_bytes());
            let _ = out.write_all(b"\n");
        }
        let _ = out.flush();
    }
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn masks_replace_the_values_they_point_at_in_every_call_of_a_batch() {
        let dir = std::env::temp_dir().join(format!("tg-mask-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = DecisionLog::start(
            &dir.join("log.jsonl"),
            4,
            vec!["/args/command".into(), "/nowhere".into()],
        )
        .unwrap();
        let one = serde_json::json!({"tool": "bash", "args": {"command": "secret", "cwd": "/x"}});
        let masked = log.masked(one);
        assert_eq!(masked["args"]["command"], MASKED);
        assert_eq!(masked["args"]["cwd"], "/x");
        let batch = serde_json::json!([{"args": {"command": "a"}}, {"args": {"other": "b"}}]);
        let masked = log.masked(batch);
        assert_eq!(masked[0]["args"]["command"], MASKED);
        assert_eq!(masked[1]["args"]["other"], "b");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_full_queue_drops_the_entry_instead_of_waiting() {
        // No writer drains this queue of one.
        let (tx, _rx) = sync_channel(1);
        let log = DecisionLog {
            tx,
            mask: Vec::new(),
        };
        assert!(log.send("first".into()));
        assert!(!log.send("second".into()));
    }

    #[test]
    fn a_mask_that_is_not_a_json_pointer_is_refused() {
        let dir = std::env::temp_dir();
        let e = DecisionLog::start(&dir.join("unused.jsonl"), 1, vec!["args.command".into()]);
        assert!(matches!(e, Err(ServeError::Mask { .. })));
    }
}

//! Claude Code front end (in progress).

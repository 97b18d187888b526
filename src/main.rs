//! The `toolgate` command line.
fn main() {}

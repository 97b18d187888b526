//! The reference evaluator: the specification written as plainly as possible.
//!
//! It reads the policy document model directly, merges the sources, expands
//! the aliases and decides calls with loops over the rules and a
//! straightforward glob matcher. It shares no matching code with `compile`
//! or `runtime`: it is the oracle the conformance harness and the
//! differential tests hold the compiled runtime to.

/// agentpolicy's PrefixMatcher on one string: `P:*` matches values starting
/// with `P`; any other specifier matches the value exactly.
pub fn prefix_matches(spec: &str, value: &str) -> bool {
    match spec.strip_suffix(":*") {
        Some(prefix) => value.starts_with(prefix),
        None => value == spec,
    }
}

/// agentpolicy's GlobMatcher on one string: a trailing `:*` is a wildcard at
/// a word boundary (`P:*` is `P` or `P *`; `:*` alone is everything), and
/// otherwise the specifier is a glob.
pub fn glob_spec_matches(spec: &str, value: &str) -> bool {
    match spec.strip_suffix(":*") {
        Some("") => true,
        Some(p) => glob(p, value) || glob(&format!("{p} *"), value),
        None => glob(spec, value),
    }
}

/// The glob of agentpolicy: split the pattern at every `*`; the value must
/// start with the first piece, end with the last, and contain each middle
/// piece in order, each found left-most after the previous one, with no two
/// pieces overlapping. Without a `*` the value must equal the pattern.
pub fn glob(pattern: &str, value: &str) -> bool {
    let pieces: Vec<&str> = pattern.split('*').collect();
    if pieces.len() == 1 {
        return pattern == value;
    }
    let first = pieces.first().copied().unwrap_or("");
    let last = pieces.last().copied().unwrap_or("");
    let Some(mut rest) = value.strip_prefix(first) else {
        return false;
    };
    for middle in pieces.iter().skip(1).take(pieces.len() - 2) {
        match rest.find(middle) {
            Some(i) => rest = rest.get(i + middle.len()..).unwrap_or(""),
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

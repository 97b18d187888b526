//! Any text as a rule list and as a policy document.

use toolgate::engine::Engine;
use toolgate::policy::Policy;
use toolgate::syntax::parse_rules;
use toolgate_reference::Reference;

/// The parsing properties, for any text:
///
/// * as a rule list: whatever parses prints back (the tokens' texts joined
///   by spaces) to a list that parses to the same rules; an error names a
///   token that is the text of its span;
/// * as a JSON and a TOML policy document, and inside a document as a deny
///   list: reading never panics, and a policy that reads is built by both
///   engines alike (both build, or both refuse with the same first kind).
///
/// # Errors
///
/// A message saying which property failed, on what.
pub fn check_parse(text: &str) -> std::result::Result<(), crate::Mismatch> {
    check_parse_inner(text).map_err(crate::Mismatch)
}

fn check_parse_inner(text: &str) -> std::result::Result<(), String> {
    match parse_rules(text) {
        Ok(rules) => {
            let printed = rules.iter().map(|t| t.text()).collect::<Vec<_>>().join(" ");
            let again = parse_rules(&printed).map_err(|e| {
                format!(
                    "{text:?} parsed, but its printed form {printed:?} does not: {}",
                    e.reference_message()
                )
            })?;
            let a: Vec<_> = rules.iter().map(|t| (&t.tool, &t.spec)).collect();
            let b: Vec<_> = again.iter().map(|t| (&t.tool, &t.spec)).collect();
            if a != b {
                return Err(format!(
                    "{text:?} parsed to {a:?}, its printed form {printed:?} to {b:?}"
                ));
            }
            for t in &rules {
                if text.get(t.span.start..t.span.end) != Some(t.text().as_str()) {
                    return Err(format!(
                        "{text:?}: the span {}..{} of {:?} is not its text",
                        t.span.start,
                        t.span.end,
                        t.text()
                    ));
                }
            }
        }
        Err(e) => {
            if text.get(e.span.start..e.span.end) != Some(e.token.as_str()) {
                return Err(format!(
                    "{text:?}: the error {} names {:?}, but its span {}..{} is {:?}",
                    e.kind.name(),
                    e.token,
                    e.span.start,
                    e.span.end,
                    text.get(e.span.start..e.span.end)
                ));
            }
        }
    }
    if let Ok(p) = Policy::from_json(text) {
        builds_alike(&p)?;
    }
    if let Ok(p) = Policy::from_toml(text) {
        builds_alike(&p)?;
    }
    let doc = serde_json::json!({"default": "ask", "deny": text}).to_string();
    if let Ok(p) = Policy::from_json(&doc) {
        builds_alike(&p)?;
    }
    Ok(())
}

/// Both engines build `p`, or both refuse it with the same first kind.
pub(super) fn builds_alike(p: &Policy) -> Result<(), String> {
    let registry = toolgate::builtins::registry();
    let r = Reference::build(p, &registry);
    let c = Engine::build_with(p, &registry);
    match (r, c) {
        (Ok(_), Ok(_)) => Ok(()),
        (Err(a), Err(b)) if a.first().kind == b.first().kind => Ok(()),
        (r, c) => Err(format!(
            "the engines build differently: reference {:?}, compiled {:?}",
            r.err().map(|d| d.to_string()),
            c.err().map(|d| d.to_string())
        )),
    }
}

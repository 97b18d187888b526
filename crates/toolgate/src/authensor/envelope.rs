//! Reading an action envelope and the session it belongs to.

use super::{Envelope, Session, MAX_HISTORY};
use serde_json::Value;

/// The envelope members toolgate reads, and whether each is required.
const MEMBERS: [(&str, bool); 5] = [
    ("id", false),
    ("action", true),
    ("resource", true),
    ("principalId", true),
    ("timestamp", false),
];

/// Other spellings of the members read, folded as
/// [`crate::call::folded`] folds them: a host on the engine's own shape
/// names the principal `principal` (`principal.id`) and the action's type
/// `actionType`.
const SPELLINGS: [(&str, &str); 2] = [("principal", "principalId"), ("actiontype", "action")];

pub(super) fn read(mut value: Value) -> Result<Envelope, String> {
    if let Some((path, key)) = crate::json::find_nul(&value) {
        return Err(crate::json::nul_refusal(&crate::json::nul_place(
            &path, key,
        )));
    }
    let Some(obj) = value.as_object_mut() else {
        return Err("the envelope is not a JSON object".into());
    };
    // A member read under a second spelling (`principal_id`, `Action`,
    // `principal`): a host may read that one instead.
    for k in obj.keys() {
        let own = MEMBERS
            .iter()
            .map(|(m, _)| *m)
            .chain(["session", "constraints"])
            .find(|m| crate::call::same_spelling(m, k))
            .or_else(|| {
                SPELLINGS
                    .iter()
                    .find(|(s, _)| crate::call::same_spelling(s, k))
                    .map(|(_, m)| *m)
            });
        if let Some(own) = own.filter(|own| own != k) {
            return Err(format!(
                "the envelope names `{own}` a second way, as `{}`: a host may read that one instead; send `{own}` alone",
                crate::json::shown(k)
            ));
        }
    }
    if let Some(a) = obj.get("action").and_then(Value::as_str) {
        if a.contains(char::is_control) {
            return Err(format!(
                "the action `{}` holds a control character, which a host may cut or read differently: name the action without it",
                crate::json::shown(a)
            ));
        }
    }
    for (m, required) in MEMBERS {
        match obj.get(m) {
            Some(Value::String(_)) => {}
            Some(_) => return Err(format!("`{m}` is not a string")),
            None if required => return Err(format!("`{m}` is missing")),
            None => {}
        }
    }
    match obj.get("riskScore") {
        None | Some(Value::Number(_)) => {}
        Some(_) => return Err("`riskScore` is not a number".into()),
    }
    let session = match obj.shift_remove("session") {
        None => None,
        Some(s) => Some(session(&s)?),
    };
    Ok(Envelope {
        value,
        session,
        error: None,
    })
}

fn session(v: &Value) -> Result<Session, String> {
    let Some(obj) = v.as_object() else {
        return Err("`session` is not an object".into());
    };
    for k in obj.keys() {
        if !["sessionId", "actions", "totalRiskScore"].contains(&k.as_str()) {
            return Err(format!(
                "unknown member `{k}` in `session`: the members are `sessionId`, `actions`, `totalRiskScore`"
            ));
        }
    }
    let session_id = match obj.get("sessionId") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("`session.sessionId` is not a string".into()),
    };
    match obj.get("totalRiskScore") {
        None | Some(Value::Number(_)) => {}
        Some(_) => return Err("`session.totalRiskScore` is not a number".into()),
    }
    if obj.get("actions").is_none() {
        if let Some(id) = session_id {
            // The history is the store's: read when the decision is made
            // through `KeptSessions`.
            return Ok(Session {
                session_id: Some(id),
                actions: Vec::new(),
                risk_scores: Vec::new(),
                stored: true,
            });
        }
    }
    let Some(list) = obj.get("actions").and_then(Value::as_array) else {
        return Err(
            "`session.actions` is missing or not a list: send the earlier actions, or a `sessionId` alone for a session the service keeps"
                .into(),
        );
    };
    if list.len() > MAX_HISTORY {
        return Err(format!(
            "the session holds {} actions, more than {MAX_HISTORY}",
            list.len()
        ));
    }
    let mut actions = Vec::with_capacity(list.len());
    let mut risk_scores = Vec::with_capacity(list.len());
    for (i, a) in list.iter().enumerate() {
        let Some(a) = a.as_object() else {
            return Err(format!("`session.actions[{i}]` is not an object"));
        };
        for (k, x) in a {
            let ok = match k.as_str() {
                "actionType" => x.is_string(),
                "timestamp" => x.is_string(),
                "riskScore" => x.is_number(),
                _ => {
                    return Err(format!(
                        "unknown member `{k}` in `session.actions[{i}]`: the members are `actionType`, `timestamp`, `riskScore`"
                    ))
                }
            };
            if !ok {
                return Err(format!(
                    "`session.actions[{i}].{k}` is not a {}",
                    if k == "riskScore" { "number" } else { "string" }
                ));
            }
        }
        risk_scores.push(a.get("riskScore").and_then(Value::as_f64).unwrap_or(0.0));
        match a.get("actionType").and_then(Value::as_str) {
            Some(t) => actions.push(t.to_string()),
            None => return Err(format!("`session.actions[{i}].actionType` is missing")),
        }
    }
    Ok(Session {
        session_id,
        actions,
        risk_scores,
        stored: false,
    })
}

#[cfg(test)]
mod tests {
    use super::read;
    use serde_json::json;

    fn envelope(extra: serde_json::Value) -> serde_json::Value {
        let mut v = json!({"id": "e1", "action": "file.read", "resource": "/tmp/x",
            "principalId": "agent-1", "timestamp": "2026-01-01T00:00:00Z"});
        if let (Some(m), Some(x)) = (v.as_object_mut(), extra.as_object()) {
            for (k, x) in x {
                m.insert(k.clone(), x.clone());
            }
        }
        v
    }

    #[test]
    fn an_envelope_with_a_nul_byte_or_a_second_spelling_is_refused() {
        let refused = |extra| read(envelope(extra)).err().unwrap_or_default();
        assert!(refused(json!({"resource": "/etc/shadow\u{0}"}))
            .starts_with("the string at `resource` holds a NUL byte"));
        assert!(
            refused(json!({"context": {"a\u{0}": 1}})).starts_with("the key `context.a\\u0000`")
        );
        assert!(refused(json!({"action": "file.read\n"})).contains("holds a control character"));
        for (extra, own) in [
            (json!({"principal": {"id": "x"}}), "principalId"),
            (json!({"principal_id": "x"}), "principalId"),
            (json!({"actionType": "shell.execute"}), "action"),
            (json!({"RESOURCE": "/etc/shadow"}), "resource"),
            (json!({"Session": {}}), "session"),
        ] {
            let e = refused(extra.clone());
            assert!(
                e.starts_with(&format!("the envelope names `{own}` a second way")),
                "{extra}: {e}"
            );
        }
        assert!(read(envelope(
            json!({"context": {"principal": "p"}, "resource2": "x"})
        ))
        .is_ok());
    }
}

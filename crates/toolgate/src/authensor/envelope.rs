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

pub(super) fn read(mut value: Value) -> Result<Envelope, String> {
    let Some(obj) = value.as_object_mut() else {
        return Err("the envelope is not a JSON object".into());
    };
    for (m, required) in MEMBERS {
        match obj.get(m) {
            Some(Value::String(_)) => {}
            Some(_) => return Err(format!("`{m}` is not a string")),
            None if required => return Err(format!("`{m}` is missing")),
            None => {}
        }
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
    let Some(list) = obj.get("actions").and_then(Value::as_array) else {
        return Err("`session.actions` is missing or not a list".into());
    };
    if list.len() > MAX_HISTORY {
        return Err(format!(
            "the session holds {} actions, more than {MAX_HISTORY}",
            list.len()
        ));
    }
    let mut actions = Vec::with_capacity(list.len());
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
        match a.get("actionType").and_then(Value::as_str) {
            Some(t) => actions.push(t.to_string()),
            None => return Err(format!("`session.actions[{i}].actionType` is missing")),
        }
    }
    Ok(Session {
        session_id,
        actions,
    })
}

//! The resident hook: `toolgate hook claude-code --connect ADDR` forwards
//! the payload to a running `toolgate serve` and prints its answer. Only a
//! well-formed answer is passed on; anything else is an error the caller
//! turns into a local decision or, with `--fail-closed`, a deny, so a dead
//! or confused server never turns into an allow. With `--token-file` the
//! answer must also carry the server's proof over a fresh nonce
//! (`client::hook_proof`), so that another program listening on the port
//! cannot answer for the server.

use std::time::Duration;

/// `--connect` and what goes with it.
pub struct Connect<'a> {
    /// The server: `HOST:PORT` or `unix:PATH`.
    pub addr: &'a str,
    /// Deny, rather than decide locally, when the server cannot answer.
    pub fail_closed: bool,
    /// The file holding the server's token.
    pub token_file: Option<&'a str>,
}

/// How long the server may take: well under Claude Code's hook timeout, and
/// long enough for a loaded machine.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The server's answer to `payload`, exactly as it sent it; why there is
/// none.
pub fn forward(addr: &str, token_file: Option<&str>, payload: &[u8]) -> Result<String, String> {
    let addr = toolgate_server::Addr::parse(addr).map_err(|e| e.to_string())?;
    let token = match token_file {
        Some(f) => {
            Some(toolgate_server::read_token(std::path::Path::new(f)).map_err(|e| e.to_string())?)
        }
        None => None,
    };
    use toolgate_server::client;
    // With a token, the answer must prove the server holds it: whatever
    // else listens on the port (a program the agent started there while
    // the server was down) cannot pass an allow on.
    let nonce = match &token {
        Some(_) => {
            Some(client::nonce().map_err(|e| format!("no nonce for the server's proof: {e}"))?)
        }
        None => None,
    };
    // The token itself is never sent: whatever answers on the port would
    // hold it then (a review's impostor relayed it to a server of its own).
    // A keyed hash over the nonce shows the server we hold it.
    let credential = match (&token, &nonce) {
        (Some(t), Some(n)) => Some(client::hook_credential(t, n)),
        _ => None,
    };
    let mut headers: Vec<(&str, &str)> = Vec::new();
    if let (Some(n), Some(c)) = (&nonce, &credential) {
        headers.push((client::NONCE_HEADER, n));
        headers.push((client::CREDENTIAL_HEADER, c));
    }
    let answer = client::post_with(
        &addr,
        "/v1/hooks/claude-code",
        payload,
        None,
        &headers,
        TIMEOUT,
    )
    .map_err(|e| format!("`toolgate serve` at `{addr}` cannot be reached: {e}"))?;
    let (status, body) = (answer.status, answer.body);
    if status != 200 || !crate::guard::is_answer(crate::guard::Event::PreToolUse, &body) {
        return Err(format!(
            "`toolgate serve` at `{addr}` did not answer the hook (HTTP status {status})"
        ));
    }
    if let (Some(t), Some(n)) = (&token, &nonce) {
        let want = client::hook_proof(t, n, &body);
        if answer.proof.as_deref() != Some(want.as_str()) {
            return Err(format!(
                "what answered at `{addr}` did not prove it holds the token: it is not this `toolgate serve`"
            ));
        }
    }
    String::from_utf8(body)
        .map_err(|_| format!("`toolgate serve` at `{addr}` answered with bytes that are not UTF-8"))
}

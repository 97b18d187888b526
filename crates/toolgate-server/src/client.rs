//! A small blocking HTTP/1.1 client for the resident hook (`toolgate hook
//! claude-code --connect ADDR`): one `POST` over TCP or a unix socket,
//! bounded in time and in the size of the answer. It needs no runtime, so
//! the hook starts as fast as a process can.

use crate::Addr;
use std::io::{Read, Write};
use std::time::Duration;

/// The largest answer read.
pub const ANSWER_LIMIT: u64 = 1 << 20;

/// The header a resident hook sends a fresh nonce in (32 hex digits).
pub const NONCE_HEADER: &str = "x-toolgate-nonce";

/// The header the server answers a nonce with: [`hook_proof`].
pub const PROOF_HEADER: &str = "x-toolgate-proof";

/// The header a resident hook proves it holds the token with, over its
/// nonce ([`hook_credential`]), in place of sending the token: whatever
/// answers on the port learns nothing it can prove itself with.
pub const CREDENTIAL_HEADER: &str = "x-toolgate-credential";

/// What a resident hook sends for `nonce` to show it holds `token`: BLAKE3
/// keyed from the token, over a label and the nonce, in hex. The server
/// takes it in place of the bearer token on the hook endpoint.
///
/// ```
/// use toolgate_server::client::{hook_credential, hook_proof};
/// let n = "00112233445566778899aabbccddeeff";
/// assert_ne!(hook_credential("secret", n), hook_proof("secret", n, b""));
/// ```
pub fn hook_credential(token: &str, nonce: &str) -> String {
    let key = blake3::derive_key("toolgate resident hook proof v1", token.as_bytes());
    let mut h = blake3::Hasher::new_keyed(&key);
    h.update(b"client\0");
    h.update(nonce.as_bytes());
    h.finalize().to_hex().to_string()
}

/// What shows that the answer `body` to the nonce `nonce` came from a
/// server holding `token`: BLAKE3 keyed with a key derived from the token,
/// over the nonce, a NUL and the body, in hex. Whatever answers on the
/// port without the token (a program the agent started there while the
/// server was down) cannot make it.
///
/// ```
/// use toolgate_server::client::hook_proof;
/// let p = hook_proof("secret", "00112233445566778899aabbccddeeff", b"{}");
/// assert_eq!(p.len(), 64);
/// assert_ne!(p, hook_proof("other", "00112233445566778899aabbccddeeff", b"{}"));
/// assert_ne!(p, hook_proof("secret", "00112233445566778899aabbccddeeff", b"{ }"));
/// ```
pub fn hook_proof(token: &str, nonce: &str, body: &[u8]) -> String {
    let key = blake3::derive_key("toolgate resident hook proof v1", token.as_bytes());
    let mut h = blake3::Hasher::new_keyed(&key);
    h.update(b"server\0");
    h.update(nonce.as_bytes());
    h.update(&[0]);
    h.update(body);
    h.finalize().to_hex().to_string()
}

/// A fresh nonce for [`NONCE_HEADER`]: 16 bytes of the system's random
/// source, in hex.
///
/// # Errors
///
/// When the random source cannot be read.
pub fn nonce() -> std::io::Result<String> {
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Why a request got no answer.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClientError {
    /// The server could not be reached, or the exchange failed.
    Io(std::io::Error),
    /// The server answered something that is not an HTTP response.
    Malformed(String),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Io(e) => write!(f, "{e}"),
            ClientError::Malformed(why) => write!(f, "the answer is not HTTP: {why}"),
        }
    }
}

impl std::error::Error for ClientError {}

/// Sends `body` to `path` on `addr` with `POST`; the status and the body
/// of the answer. Each of connecting, writing and reading gives up after
/// `timeout`.
///
/// # Errors
///
/// [`ClientError`] when there is no well-formed answer.
pub fn post(
    addr: &Addr,
    path: &str,
    body: &[u8],
    token: Option<&str>,
    timeout: Duration,
) -> Result<(u16, Vec<u8>), ClientError> {
    request(addr, "POST", path, body, token, &[], timeout).map(|a| (a.status, a.body))
}

/// An answer: its status, the headers named in the request's `want`, and
/// its body.
#[derive(Debug)]
pub struct Answer {
    /// The status.
    pub status: u16,
    /// The value of the proof header ([`PROOF_HEADER`]), when sent.
    pub proof: Option<String>,
    /// The body.
    pub body: Vec<u8>,
}

/// As [`post`], sending `headers` too, and keeping the answer's
/// [`PROOF_HEADER`].
///
/// # Errors
///
/// As [`post`].
pub fn post_with(
    addr: &Addr,
    path: &str,
    body: &[u8],
    token: Option<&str>,
    headers: &[(&str, &str)],
    timeout: Duration,
) -> Result<Answer, ClientError> {
    request(addr, "POST", path, body, token, headers, timeout)
}

/// As [`post`], with `GET` and no body.
///
/// # Errors
///
/// As [`post`].
pub fn get(
    addr: &Addr,
    path: &str,
    token: Option<&str>,
    timeout: Duration,
) -> Result<(u16, Vec<u8>), ClientError> {
    request(addr, "GET", path, b"", token, &[], timeout).map(|a| (a.status, a.body))
}

fn request(
    addr: &Addr,
    method: &str,
    path: &str,
    body: &[u8],
    token: Option<&str>,
    headers: &[(&str, &str)],
    timeout: Duration,
) -> Result<Answer, ClientError> {
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if let Some(t) = token {
        head.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let raw = match addr {
        Addr::Tcp(a) => {
            let mut s =
                std::net::TcpStream::connect_timeout(a, timeout).map_err(ClientError::Io)?;
            s.set_read_timeout(Some(timeout)).map_err(ClientError::Io)?;
            s.set_write_timeout(Some(timeout))
                .map_err(ClientError::Io)?;
            let _ = s.set_nodelay(true);
            exchange(&mut s, head.as_bytes(), body)?
        }
        Addr::Unix(p) => {
            let mut s = std::os::unix::net::UnixStream::connect(p).map_err(ClientError::Io)?;
            s.set_read_timeout(Some(timeout)).map_err(ClientError::Io)?;
            s.set_write_timeout(Some(timeout))
                .map_err(ClientError::Io)?;
            exchange(&mut s, head.as_bytes(), body)?
        }
    };
    parse(&raw)
}

fn exchange<S: Read + Write>(s: &mut S, head: &[u8], body: &[u8]) -> Result<Vec<u8>, ClientError> {
    let mut request = Vec::with_capacity(head.len() + body.len());
    request.extend_from_slice(head);
    request.extend_from_slice(body);
    s.write_all(&request).map_err(ClientError::Io)?;
    s.flush().map_err(ClientError::Io)?;
    let mut raw = Vec::new();
    s.take(ANSWER_LIMIT + 16 * 1024)
        .read_to_end(&mut raw)
        .map_err(ClientError::Io)?;
    Ok(raw)
}

/// Splits a response read to its end: the status, and the body (by its
/// `Content-Length`, else all that followed the headers).
fn parse(raw: &[u8]) -> Result<Answer, ClientError> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| ClientError::Malformed("no end of headers".into()))?;
    let head = String::from_utf8_lossy(raw.get(..end).unwrap_or_default());
    let body = raw.get(end + 4..).unwrap_or_default();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse::<u16>().ok())
        .ok_or_else(|| ClientError::Malformed("no status line".into()))?;
    let fields: Vec<(&str, &str)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim(), v.trim()))
        .collect();
    let field = |name: &str| {
        fields
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)
    };
    let length = field("content-length").and_then(|v| v.parse::<usize>().ok());
    let proof = field(PROOF_HEADER).map(str::to_string);
    let body = match length {
        Some(n) => body
            .get(..n)
            .ok_or_else(|| ClientError::Malformed("the body was cut short".into()))?,
        None => body,
    };
    if body.len() as u64 > ANSWER_LIMIT {
        return Err(ClientError::Malformed("the body is too long".into()));
    }
    Ok(Answer {
        status,
        proof,
        body: body.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_response_is_split_by_its_content_length() {
        let raw = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nX-Toolgate-Proof: ab\r\n\r\n{}trailing";
        let a = parse(raw).unwrap();
        assert_eq!(
            (a.status, a.body, a.proof.as_deref()),
            (200, b"{}".to_vec(), Some("ab"))
        );
        assert!(parse(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{}").is_err());
        assert!(parse(b"garbage").is_err());
    }
}

//! A small blocking HTTP/1.1 client for the resident hook (`toolgate hook
//! claude-code --connect ADDR`): one `POST` over TCP or a unix socket,
//! bounded in time and in the size of the answer. It needs no runtime, so
//! the hook starts as fast as a process can.

use crate::Addr;
use std::io::{Read, Write};
use std::time::Duration;

/// The largest answer read.
pub const ANSWER_LIMIT: u64 = 1 << 20;

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
    request(addr, "POST", path, body, token, timeout)
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
    request(addr, "GET", path, b"", token, timeout)
}

fn request(
    addr: &Addr,
    method: &str,
    path: &str,
    body: &[u8],
    token: Option<&str>,
    timeout: Duration,
) -> Result<(u16, Vec<u8>), ClientError> {
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if let Some(t) = token {
        head.push_str(&format!("Authorization: Bearer {t}\r\n"));
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
fn parse(raw: &[u8]) -> Result<(u16, Vec<u8>), ClientError> {
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
    let length = lines.find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| v.trim().parse::<usize>().ok())
            .flatten()
    });
    let body = match length {
        Some(n) => body
            .get(..n)
            .ok_or_else(|| ClientError::Malformed("the body was cut short".into()))?,
        None => body,
    };
    if body.len() as u64 > ANSWER_LIMIT {
        return Err(ClientError::Malformed("the body is too long".into()));
    }
    Ok((status, body.to_vec()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_response_is_split_by_its_content_length() {
        let raw = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}trailing";
        assert_eq!(parse(raw).unwrap(), (200, b"{}".to_vec()));
        assert!(parse(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{}").is_err());
        assert!(parse(b"garbage").is_err());
    }
}

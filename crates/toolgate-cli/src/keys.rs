//! Signing keys and detached signatures, as files of hexadecimal text: a
//! secret key is its 32-byte ed25519 seed, a public key 32 bytes, a
//! signature 64 bytes, each written as lowercase hex and a newline.

use std::io::Read;

/// Reads `len` bytes written as hex, from `arg` itself when it is that
/// many hex digits, else from the file it names.
pub(crate) fn read_hex<const N: usize>(arg: &str, what: &str) -> Result<[u8; N], String> {
    let text = if arg.len() == 2 * N && arg.bytes().all(|b| b.is_ascii_hexdigit()) {
        arg.to_string()
    } else {
        std::fs::read_to_string(arg).map_err(|e| format!("cannot read the {what} `{arg}`: {e}"))?
    };
    parse_hex(text.trim()).ok_or_else(|| {
        format!(
            "the {what} `{arg}` is not {N} bytes of hex ({} hex digits)",
            2 * N
        )
    })
}

fn parse_hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    if text.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (slot, pair) in out.iter_mut().zip(text.as_bytes().chunks(2)) {
        let s = std::str::from_utf8(pair).ok()?;
        *slot = u8::from_str_radix(s, 16).ok()?;
    }
    Some(out)
}

/// Lowercase hex and a newline.
pub fn hex(bytes: &[u8]) -> String {
    let mut s: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    s.push('\n');
    s
}

/// Makes a key pair from the system's random source: `out` holds the
/// secret seed (readable by its owner only), `out.pub` the public key.
pub(crate) fn keygen(out: &str) -> Result<String, String> {
    let mut seed = [0u8; toolgate::artifact::SECRET_KEY_LEN];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut seed))
        .map_err(|e| format!("cannot read random bytes from `/dev/urandom`: {e}"))?;
    let public = toolgate::artifact::public_key(&seed);
    write_private(out, &hex(&seed))?;
    let pub_path = format!("{out}.pub");
    std::fs::write(&pub_path, hex(&public))
        .map_err(|e| format!("cannot write `{pub_path}`: {e}"))?;
    Ok(pub_path)
}

fn write_private(path: &str, text: &str) -> Result<(), String> {
    use std::io::Write as _;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        opts.mode(0o600);
    }
    let mut f = opts.open(path).map_err(|e| {
        format!("cannot create `{path}` (an existing key is never overwritten): {e}")
    })?;
    f.write_all(text.as_bytes())
        .map_err(|e| format!("cannot write `{path}`: {e}"))
}

/// The options a loader runs under when a signature is required: the
/// signature read from `signature` (or `<artifact>.sig`), checked against
/// the public key `public`.
pub fn require(
    options: toolgate::artifact::LoadOptions,
    artifact: &str,
    public: Option<&str>,
    signature: Option<&str>,
) -> Result<toolgate::artifact::LoadOptions, String> {
    let Some(public) = public else {
        return Ok(options);
    };
    let key = read_hex::<{ toolgate::artifact::PUBLIC_KEY_LEN }>(public, "public key")?;
    let sig_path = signature.map_or_else(|| format!("{artifact}.sig"), str::to_string);
    let sig = read_hex::<{ toolgate::artifact::SIGNATURE_LEN }>(&sig_path, "signature")?;
    Ok(options.require_signature(sig, key))
}

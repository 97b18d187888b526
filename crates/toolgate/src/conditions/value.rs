//! Reading a request's fields: dot paths, and JavaScript's `String(v)`.
//!
//! Conditions address the request by dot path (`input.command`,
//! `args.0`). A path walks own members of objects and canonical indices of
//! arrays (and an array's `length`); anything else resolves to nothing.
//! String operators read the field through JavaScript's `String(v)`, which
//! Rubric's evaluator uses: numbers in the shortest round-trip form with
//! JavaScript's exponent rules, arrays joined with `,`, objects as
//! `[object Object]`.
//!
//! Depends on serde_json only. The reference interpreter has its own
//! versions of both, written differently.

use serde_json::Value;

/// What a dot path resolves to in a request.
#[derive(Clone, Copy, Debug)]
pub enum Field<'v> {
    /// A JSON value other than `null`.
    Value(&'v Value),
    /// An array's `length`.
    Length(usize),
}

/// Resolves the dot path `parts` in `root`: `None` for a missing member,
/// a `null` anywhere on the way, or a step into a string, number or bool.
pub fn resolve<'v, S: AsRef<str>>(root: &'v Value, parts: &[S]) -> Option<Field<'v>> {
    let mut cur = root;
    let mut it = parts.iter().peekable();
    while let Some(part) = it.next() {
        let part = part.as_ref();
        cur = match cur {
            Value::Object(_) => member(cur, part)?,
            Value::Array(a) => {
                if part == "length" {
                    return match it.peek() {
                        None => Some(Field::Length(a.len())),
                        // A number is not walkable.
                        Some(_) => None,
                    };
                }
                a.get(array_index(part)?)?
            }
            _ => return None,
        };
    }
    match cur {
        Value::Null => None,
        v => Some(Field::Value(v)),
    }
}

/// The member `key` of an object (`None` for anything else).
#[inline]
pub fn member<'v>(v: &'v Value, key: &str) -> Option<&'v Value> {
    let Value::Object(m) = v else { return None };
    if m.len() > 8 {
        return m.get(key);
    }
    // PERF: a request's objects are small; comparing a few keys (length and
    // first byte first) is cheaper than hashing the key with SipHash.
    let (len, first) = (key.len(), key.as_bytes().first());
    m.iter()
        .find(|(k, _)| k.len() == len && k.as_bytes().first() == first && *k == key)
        .map(|(_, v)| v)
}

/// The index a part names when it is a canonical array index: decimal
/// digits, no sign, no leading zero (but `0` itself).
fn array_index(part: &str) -> Option<usize> {
    let b = part.as_bytes();
    if b.is_empty()
        || !b.iter().all(u8::is_ascii_digit)
        || (b.len() > 1 && b.first() == Some(&b'0'))
    {
        return None;
    }
    part.parse().ok()
}

/// JavaScript's `Number.prototype.toString()`: the shortest digits that
/// read back, in plain notation from 1e-6 up to 1e21 and in exponent
/// notation (`1e+21`, `1.5e-7`) outside.
pub fn js_number(x: f64) -> String {
    let mut out = String::new();
    js_number_into(x, &mut out);
    out
}

/// Beneath every integer below 2^53 lies a double one apart, so its
/// exact digits are also its shortest.
const EXACT_INTEGERS: f64 = 9_007_199_254_740_992.0;

/// [`js_number`], appended to `out`: a field's number is printed once a
/// decision, into the decision's scratch text.
pub fn js_number_into(x: f64, out: &mut String) {
    use std::fmt::Write as _;
    if x == 0.0 {
        out.push('0');
        return;
    }
    if !x.is_finite() {
        out.push_str(if x.is_nan() {
            "NaN"
        } else if x > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        });
        return;
    }
    if x.fract() == 0.0 && x.abs() < EXACT_INTEGERS {
        // Exact: the guard keeps the value inside i64.
        let _ = write!(out, "{}", x as i64);
        return;
    }
    // `{:e}` gives the shortest round-trip digits, `d.ddde±x`, at most 24
    // bytes for a double: written on the stack, not allocated.
    let mut sci = Stack::default();
    let _ = write!(sci, "{:e}", x.abs());
    let sci = sci.as_str();
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let mut digits = Stack::default();
    for c in mantissa.chars().filter(char::is_ascii_digit) {
        let _ = digits.write_char(c);
    }
    let digits = digits.as_str();
    let exp: i64 = exp.parse().unwrap_or(0);
    let k = digits.len() as i64;
    let n = exp + 1;
    if x < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 21 {
        out.push_str(digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        let (a, b) = digits.split_at(n as usize);
        out.push_str(a);
        out.push('.');
        out.push_str(b);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(digits);
    } else {
        let (a, b) = digits.split_at(1);
        out.push_str(a);
        if !b.is_empty() {
            out.push('.');
            out.push_str(b);
        }
        out.push('e');
        out.push(if n > 0 { '+' } else { '-' });
        let _ = write!(out, "{}", (n - 1).abs());
    }
}

/// A short text on the stack; what does not fit is dropped (a double's
/// `{:e}` always fits).
#[derive(Default)]
struct Stack {
    buf: [u8; 32],
    len: usize,
}

impl Stack {
    fn as_str(&self) -> &str {
        self.buf
            .get(..self.len)
            .and_then(|b| std::str::from_utf8(b).ok())
            .unwrap_or_default()
    }
}

impl std::fmt::Write for Stack {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        let slot = self.buf.get_mut(self.len..end).ok_or(std::fmt::Error)?;
        slot.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// JavaScript's `String(v)` of a JSON value; `null` inside an array is the
/// empty text, as `Array.prototype.join` writes it.
pub fn js_string(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => js_number_into(n.as_f64().unwrap_or(f64::NAN), out),
        Value::String(s) => out.push_str(s),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if !item.is_null() {
                    js_string(item, out);
                }
            }
        }
        Value::Object(_) => out.push_str("[object Object]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_print_as_javascript_prints_them() {
        for (x, want) in [
            (1.0, "1"),
            (-0.0, "0"),
            (1.5, "1.5"),
            (-2.25, "-2.25"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (123456789012345680000.0, "123456789012345680000"),
            (1e-6, "0.000001"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (0.1 + 0.2, "0.30000000000000004"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (12345678901234567890.0, "12345678901234567000"),
        ] {
            assert_eq!(js_number(x), want, "{x:e}");
        }
    }

    /// The allocation-free printer against the plain one it replaced:
    /// `{:e}`'s digits placed by the same rules, on integers around 2^53,
    /// powers of ten, halves and random bit patterns.
    #[test]
    fn the_buffer_printer_agrees_with_the_plain_one() {
        fn plain(x: f64) -> String {
            if x == 0.0 {
                return "0".into();
            }
            if !x.is_finite() {
                return js_number(x);
            }
            let sci = format!("{:e}", x.abs());
            let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
            let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
            let exp: i64 = exp.parse().unwrap_or(0);
            let (k, n) = (digits.len() as i64, exp + 1);
            let sign = if x < 0.0 { "-" } else { "" };
            let body = if k <= n && n <= 21 {
                format!("{digits}{}", "0".repeat((n - k) as usize))
            } else if 0 < n && n <= 21 {
                let (a, b) = digits.split_at(n as usize);
                format!("{a}.{b}")
            } else if -6 < n && n <= 0 {
                format!("0.{}{digits}", "0".repeat((-n) as usize))
            } else {
                let (a, b) = digits.split_at(1);
                let b = if b.is_empty() {
                    String::new()
                } else {
                    format!(".{b}")
                };
                format!("{a}{b}e{}{}", if n > 0 { '+' } else { '-' }, (n - 1).abs())
            };
            format!("{sign}{body}")
        }
        let mut xs: Vec<f64> = Vec::new();
        for d in -3i64..=3 {
            let around = EXACT_INTEGERS + d as f64;
            xs.extend([around, -around, around / 2.0, 2f64.powi(62) + d as f64]);
        }
        for e in -30..=30 {
            let p = 10f64.powi(e);
            xs.extend([p, -p, p * 1.5, p + 1.0, p - 1.0]);
        }
        let mut bits = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            bits ^= bits << 13;
            bits ^= bits >> 7;
            bits ^= bits << 17;
            xs.push(f64::from_bits(bits));
            xs.push((bits % 100_000) as f64 / 100.0);
            xs.push((bits % 1_000_000_007) as f64);
        }
        for x in xs {
            let mut got = String::from("kept|");
            js_number_into(x, &mut got);
            assert_eq!(got, format!("kept|{}", plain(x)), "{x:e}");
        }
    }

    #[test]
    fn values_stringify_as_javascript_does() {
        let s = |v: Value| {
            let mut o = String::new();
            js_string(&v, &mut o);
            o
        };
        assert_eq!(s(json!(["a", 1, null, true, [2, [3]]])), "a,1,,true,2,3");
        assert_eq!(s(json!({"a": 1})), "[object Object]");
        assert_eq!(s(json!([{"a": 1}])), "[object Object]");
        assert_eq!(s(json!([])), "");
    }

    #[test]
    fn paths_walk_objects_and_arrays() {
        let r = json!({"a": {"b": [10, {"c": "x"}], "n": null}, "s": "str"});
        let get = |p: &str| {
            let parts: Vec<&str> = p.split('.').collect();
            match resolve(&r, &parts) {
                Some(Field::Value(v)) => Some(v.to_string()),
                Some(Field::Length(n)) => Some(format!("len {n}")),
                None => None,
            }
        };
        assert_eq!(get("a.b.0").as_deref(), Some("10"));
        assert_eq!(get("a.b.1.c").as_deref(), Some("\"x\""));
        assert_eq!(get("a.b.length").as_deref(), Some("len 2"));
        assert_eq!(get("a.b.length.x"), None);
        assert_eq!(get("a.b.01"), None);
        assert_eq!(get("a.b.2"), None);
        assert_eq!(get("a.n"), None);
        assert_eq!(get("a.n.x"), None);
        assert_eq!(get("s.0"), None);
        assert_eq!(get("s.length"), None);
        assert_eq!(get("missing"), None);
    }
}

//! Where the time of a JSONL line goes, at 1k rules: the parts of what
//! `toolgate decide` does per line (read the line as a strict JSON value,
//! make a `Call` of it, decide, render the verdict as a `Value`, write it
//! out), and two prototypes of what it could do instead:
//!
//! * `lazy_read`: one pass over the line that checks all of it (strict JSON,
//!   no duplicate key at any level, as `json::parse_strict` does) but builds
//!   no `Value`: it keeps the tool's name and the string members of `args`,
//!   borrowed from the line when they hold no escape. The matcher's field is
//!   then found among those.
//! * `render_direct`: the verdict line written straight into a reused
//!   buffer, with the same bytes as `Verdict::to_json().to_string()`. The
//!   CLI now does this (`write_verdict` in `main.rs`).
//!
//! The runtime cannot yet decide on a tool name and a field's string without
//! an `Args` holding a `Value` (the walk over the tables is crate-private), so
//! the lazy path is measured in parts (`lazy_read` + `decide_result` +
//! `render_direct`), and end to end as `lazy_line`, which rebuilds a one-member
//! `Args` from the field the lazy reader found (paying `Args::from_value`'s
//! re-serialisation) and renders the verdict directly.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    missing_docs
)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::hint::black_box;
use toolgate::{Call, Engine, Verdict};
use toolgate_testing::workload::Workload;

// ------------------------------------------------------ the lazy reader --

/// What the tables need of a call line: the tool, and the string members
/// of its arguments (the matcher's field is one of them).
#[derive(Debug, Default)]
pub struct LazyCall<'a> {
    pub tool: Cow<'a, str>,
    pub strings: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    pub call_id: Option<Cow<'a, str>>,
    pub run_id: Option<Cow<'a, str>>,
}

impl<'a> LazyCall<'a> {
    pub fn member(&self, field: &str) -> Option<&str> {
        self.strings
            .iter()
            .find(|(k, _)| k == field)
            .map(|(_, v)| v.as_ref())
    }
}

/// Reads a call line in one pass: strict (duplicate keys refused at every
/// level), building nothing but the tool and the string members of `args`.
pub fn lazy_read(line: &str) -> Result<LazyCall<'_>, String> {
    let mut de = serde_json::Deserializer::from_str(line);
    let call = de.deserialize_map(Top).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(call)
}

/// A string, borrowed from the input when it holds no escape.
struct Str<'a>(Cow<'a, str>);

impl<'de> de::Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

/// Refuses a key already seen in the same object.
fn fresh<'de, E: de::Error>(seen: &mut Vec<Cow<'de, str>>, k: Cow<'de, str>) -> Result<(), E> {
    if seen.contains(&k) {
        return Err(E::custom(format!("duplicate key `{k}`")));
    }
    seen.push(k);
    Ok(())
}

/// Any JSON value, checked (duplicate keys refused) and dropped.
struct Checked;

impl<'de> DeserializeSeed<'de> for Checked {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(CheckedV)
    }
}

struct CheckedV;

impl<'de> Visitor<'de> for CheckedV {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
        while s.next_element_seed(Checked)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
        let mut seen = Vec::new();
        while let Some(Str(k)) = m.next_key()? {
            fresh(&mut seen, k)?;
            m.next_value_seed(Checked)?;
        }
        Ok(())
    }
}

/// A member of `args`: its string, or `None` for anything else (checked).
struct Member;

impl<'de> DeserializeSeed<'de> for Member {
    type Value = Option<Cow<'de, str>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Option<Cow<'de, str>>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Some(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Some(Cow::Owned(v.to_string())))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<Self::Value, A::Error> {
                CheckedV.visit_seq(s).map(|()| None)
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Self::Value, A::Error> {
                CheckedV.visit_map(m).map(|()| None)
            }
        }
        d.deserialize_any(V)
    }
}

/// `args`: the string members kept, everything checked.
struct ArgsSeed;

impl<'de> DeserializeSeed<'de> for ArgsSeed {
    type Value = Vec<(Cow<'de, str>, Cow<'de, str>)>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Vec<(Cow<'de, str>, Cow<'de, str>)>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("arguments")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                let mut seen = Vec::new();
                let mut out = Vec::new();
                while let Some(Str(k)) = m.next_key()? {
                    fresh(&mut seen, k.clone())?;
                    if let Some(v) = m.next_value_seed(Member)? {
                        out.push((k, v));
                    }
                }
                Ok(out)
            }
            // Arguments that are not an object have no member.
            fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<Self::Value, A::Error> {
                CheckedV.visit_seq(s).map(|()| Vec::new())
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Vec::new())
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Vec::new())
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Vec::new())
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Vec::new())
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Vec::new())
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Vec::new())
            }
        }
        d.deserialize_any(V)
    }
}

struct Top;

impl<'de> Visitor<'de> for Top {
    type Value = LazyCall<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a call object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<LazyCall<'de>, A::Error> {
        let mut seen = Vec::new();
        let mut call = LazyCall::default();
        let mut tool = None;
        let opt = |m: &mut A| -> Result<Option<Cow<'de, str>>, A::Error> {
            Ok(m.next_value::<Option<Str<'de>>>()?.map(|s| s.0))
        };
        while let Some(Str(k)) = m.next_key()? {
            fresh(&mut seen, k.clone())?;
            match k.as_ref() {
                "tool" | "tool_name" => tool = Some(m.next_value::<Str<'de>>()?.0),
                "args" | "tool_input" => call.strings = m.next_value_seed(ArgsSeed)?,
                "call_id" | "tool_use_id" => call.call_id = opt(&mut m)?,
                "run_id" => call.run_id = opt(&mut m)?,
                "confined" | "scope" => {
                    opt(&mut m)?;
                }
                other => return Err(de::Error::custom(format!("unknown member `{other}`"))),
            }
        }
        call.tool = tool.ok_or_else(|| de::Error::custom("the call has no `tool`"))?;
        Ok(call)
    }
}

// ---------------------------------------------------- the direct writer --

/// Appends `s` as a JSON string, escaped as serde_json escapes it.
fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &str = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if esc.is_empty() {
            out.push_str(&format!("\\u{b:04x}"));
        } else {
            out.push_str(esc);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// The verdict line, as `Verdict::to_json().to_string()` writes it.
pub fn render_direct(v: &Verdict, out: &mut String) {
    out.push_str("{\"decision\":\"");
    out.push_str(v.decision.as_str());
    out.push('"');
    let mut put = |k: &str, val: &str| {
        if !val.is_empty() {
            out.push_str(",\"");
            out.push_str(k);
            out.push_str("\":");
            push_json_str(out, val);
        }
    };
    if let Some(r) = &v.rule {
        put("rule", &r.text);
        put("source", &r.source);
    }
    put("reason", &v.reason);
    put("subject", &v.subject);
    if v.held {
        out.push_str(",\"held\":true");
    }
    let mut put = |k: &str, val: &str| {
        if !val.is_empty() {
            out.push_str(",\"");
            out.push_str(k);
            out.push_str("\":");
            push_json_str(out, val);
        }
    };
    put("confined", &v.confined);
    put("by", v.by);
    put("run_id", &v.run_id);
    put("call_id", &v.call_id);
    out.push('}');
}

// ------------------------------------------------------------ benchmarks --

fn jsonl(c: &mut Criterion) {
    let mut g = c.benchmark_group("jsonl");
    g.throughput(Throughput::Elements(1));
    let n = 1_000;
    let w = Workload::generate(n, 4_096, 42);
    let engine = Engine::build(&w.policy()).unwrap();
    let lines: Vec<String> = w.calls_jsonl().lines().map(str::to_string).collect();
    let calls: Vec<Call> = lines.iter().map(|l| Call::from_json(l).unwrap()).collect();
    let verdicts: Vec<Verdict> = calls.iter().map(|c| engine.decide(c)).collect();
    // The matcher fields, as the tables would give them.
    let fields: HashMap<String, String> = w.document["matchers"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(t, m)| (t.clone(), m["field"].as_str().unwrap().to_string()))
        .collect();
    // The prototypes agree with what they replace.
    let mut buf = String::new();
    for (i, line) in lines.iter().enumerate() {
        let lazy = lazy_read(line).unwrap();
        assert_eq!(lazy.tool, calls[i].tool);
        if let Some(f) = fields.get(calls[i].tool.as_str()) {
            assert_eq!(lazy.member(f), calls[i].args.str_member(f));
        }
        buf.clear();
        render_direct(&verdicts[i], &mut buf);
        assert_eq!(buf, verdicts[i].to_json().to_string());
    }
    assert!(lazy_read(r#"{"tool":"a","args":{"x":{"k":1,"k":2}}}"#).is_err());
    assert!(lazy_read(r#"{"tool":"a","tool":"b"}"#).is_err());
    assert!(lazy_read(r#"{"tool":"a","args":{"c":"\ud800"}}"#).is_err());

    let cycle = |b: &mut criterion::Bencher<'_>, f: &mut dyn FnMut(usize)| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % lines.len();
            f(i)
        })
    };
    g.bench_function(BenchmarkId::new("line", n), |b| {
        cycle(b, &mut |i| {
            let call = Call::from_json(&lines[i]).unwrap();
            black_box(engine.decide(&call).to_json().to_string());
        })
    });
    g.bench_function(BenchmarkId::new("parse_strict", n), |b| {
        cycle(b, &mut |i| {
            black_box(toolgate::json::parse_strict(&lines[i]).unwrap());
        })
    });
    g.bench_function(BenchmarkId::new("call_from_json", n), |b| {
        cycle(b, &mut |i| {
            black_box(Call::from_json(&lines[i]).unwrap());
        })
    });
    g.bench_function(BenchmarkId::new("decide_result", n), |b| {
        cycle(b, &mut |i| {
            black_box(engine.decide_result(&calls[i]));
        })
    });
    g.bench_function(BenchmarkId::new("decide", n), |b| {
        cycle(b, &mut |i| {
            black_box(engine.decide(&calls[i]));
        })
    });
    g.bench_function(BenchmarkId::new("to_json_string", n), |b| {
        cycle(b, &mut |i| {
            black_box(verdicts[i].to_json().to_string());
        })
    });
    g.bench_function(BenchmarkId::new("lazy_read", n), |b| {
        cycle(b, &mut |i| {
            let lazy = lazy_read(&lines[i]).unwrap();
            let field = fields.get(lazy.tool.as_ref());
            black_box(field.and_then(|f| lazy.member(f)));
        })
    });
    // The lazy path end to end, with today's public API: the call is rebuilt
    // from the tool and the matcher's field alone (exact for this workload:
    // no splitter, one field per tool), decided, and written directly.
    let lazy_call = |line: &str| -> Call {
        let lazy = lazy_read(line).unwrap();
        let mut args = serde_json::Map::new();
        if let Some(f) = fields.get(lazy.tool.as_ref()) {
            if let Some(v) = lazy.member(f) {
                args.insert(f.clone(), v.into());
            }
        }
        Call {
            tool: lazy.tool.into_owned(),
            args: toolgate::Args::from_value(serde_json::Value::Object(args)),
            run_id: String::new(),
            call_id: lazy.call_id.map(Cow::into_owned).unwrap_or_default(),
            confined: None,
            scope: None,
            cwd: None,
        }
    };
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(engine.decide(&lazy_call(line)), verdicts[i]);
    }
    let mut out = String::with_capacity(256);
    g.bench_function(BenchmarkId::new("lazy_line", n), |b| {
        cycle(b, &mut |i| {
            out.clear();
            render_direct(&engine.decide(&lazy_call(&lines[i])), &mut out);
            black_box(&out);
        })
    });
    g.bench_function(BenchmarkId::new("render_direct", n), |b| {
        cycle(b, &mut |i| {
            out.clear();
            render_direct(&verdicts[i], &mut out);
            black_box(&out);
        })
    });
    // The verdict's own `Serialize`, streamed into a reused buffer: what the
    // command line writes with.
    let mut bytes: Vec<u8> = Vec::with_capacity(256);
    for v in &verdicts {
        bytes.clear();
        serde_json::to_writer(&mut bytes, v).unwrap();
        out.clear();
        render_direct(v, &mut out);
        assert_eq!(bytes, out.as_bytes());
    }
    g.bench_function(BenchmarkId::new("render_serialize", n), |b| {
        cycle(b, &mut |i| {
            bytes.clear();
            let _ = serde_json::to_writer(&mut bytes, &verdicts[i]);
            black_box(&bytes);
        })
    });
    g.finish();
}

criterion_group!(benches, jsonl);
criterion_main!(benches);

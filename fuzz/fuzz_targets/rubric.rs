//! Rubric bundles and requests: the compiled engine, the engine loaded from
//! its artifact and the plain reference interpreter give the same result
//! (decision, matched policy, version and rule, code, reason) for every
//! request, on every type the generator draws (numbers, booleans, arrays,
//! array paths, patterns that do not compile).
//!
//! Input: eight bytes seed the generator; the rest, when there is any, is
//! read as one more request, so mutations also reach request shapes the
//! generator does not draw.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolgate_reference::rubric::RubricReference;
use toolgate::rubric::{Bundle, Request, RubricEngine, RubricEvaluator, RubricResult};
use toolgate_testing::rubric::{Generator, Shape};

fn comparable(r: &RubricResult) -> serde_json::Value {
    let mut v = r.to_json();
    if let Some(m) = v.as_object_mut() {
        // Wall-clock time is the only member allowed to differ.
        m.remove("latencyMs");
    }
    v
}

fuzz_target!(|data: &[u8]| {
    let mut seed = [0u8; 8];
    for (d, s) in seed.iter_mut().zip(data) {
        *d = *s;
    }
    let mut g = Generator::new(u64::from_le_bytes(seed));
    let shape = Shape {
        all_types: true,
        ..Shape::shared()
    };
    let bundle = g.bundle(&shape);
    let Ok(b) = Bundle::from_value(&bundle) else {
        return;
    };
    let compiled = match RubricEngine::build(&b) {
        Ok(e) => e,
        Err(_) => return,
    };
    let bytes = compiled
        .to_bytes()
        .expect("a compiled bundle writes an artifact");
    let loaded = RubricEngine::from_bytes(&bytes).expect("an artifact just written loads");
    let reference = RubricReference::new(&b);
    let mut requests: Vec<Request> = (0..8)
        .filter_map(|_| Request::from_value(g.request(&shape)).ok())
        .collect();
    if let Some(extra) = data.get(8..).and_then(|d| std::str::from_utf8(d).ok()) {
        requests.push(Request::from_json(extra).unwrap_or_else(Request::unreadable));
    }
    for r in &requests {
        let want = comparable(&reference.decide(r));
        assert_eq!(
            comparable(&compiled.decide(r)),
            want,
            "compiled\nbundle {bundle}"
        );
        assert_eq!(
            comparable(&loaded.decide(r)),
            want,
            "artifact\nbundle {bundle}"
        );
    }
});

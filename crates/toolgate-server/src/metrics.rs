//! The Prometheus metrics of `/metrics`. Every label value is one of a
//! fixed few words (an outcome, an endpoint); nothing a client sends ever
//! becomes a label, so the series stay bounded whatever the traffic.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

type Labels = [(&'static str, &'static str); 1];

/// The server's counters and its latency histogram.
pub(crate) struct Metrics {
    registry: Registry,
    /// The three outcomes' counters, taken from the family once: counting
    /// a decision is then one atomic add, not a locked map lookup.
    allow: Counter,
    ask: Counter,
    deny: Counter,
    latency: Histogram,
    pub(crate) reloads: Counter,
    pub(crate) failed_reloads: Counter,
    pub(crate) log_drops: Counter,
    pub(crate) panics: Counter,
    pub(crate) shadow_differences: Counter,
    pub(crate) bad_requests: Family<Labels, Counter>,
}

impl Metrics {
    pub(crate) fn new() -> Metrics {
        let mut registry = Registry::with_prefix("toolgate");
        let decisions = Family::<Labels, Counter>::default();
        // 100 ns to 10 ms, two buckets a decade: a decision is a few
        // hundred nanoseconds, and one past 10 ms is a fault worth seeing.
        let latency = Histogram::new([
            1e-7, 3e-7, 1e-6, 3e-6, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2,
        ]);
        let reloads = Counter::default();
        let failed_reloads = Counter::default();
        let log_drops = Counter::default();
        let panics = Counter::default();
        let shadow_differences = Counter::default();
        let bad_requests = Family::<Labels, Counter>::default();
        registry.register(
            "decisions",
            "Decisions answered, by outcome",
            decisions.clone(),
        );
        registry.register(
            "decision_latency_seconds",
            "Time to decide one request body (all its calls), without the HTTP stack",
            latency.clone(),
        );
        registry.register(
            "reloads",
            "Artifacts swapped in after the first",
            reloads.clone(),
        );
        registry.register(
            "failed_reloads",
            "Artifacts refused at reload; the last good one kept serving",
            failed_reloads.clone(),
        );
        registry.register(
            "decision_log_drops",
            "Decision-log entries dropped because the log's queue was full",
            log_drops.clone(),
        );
        registry.register(
            "panics",
            "Handler panics caught and answered with a deny",
            panics.clone(),
        );
        registry.register(
            "shadow_differences",
            "Decisions where the shadow artifact's outcome differed",
            shadow_differences.clone(),
        );
        registry.register(
            "bad_requests",
            "Requests refused before deciding, by reason",
            bad_requests.clone(),
        );
        let allow = decisions.get_or_create(&[("outcome", "allow")]).clone();
        let ask = decisions.get_or_create(&[("outcome", "ask")]).clone();
        let deny = decisions.get_or_create(&[("outcome", "deny")]).clone();
        Metrics {
            registry,
            allow,
            ask,
            deny,
            latency,
            reloads,
            failed_reloads,
            log_drops,
            panics,
            shadow_differences,
            bad_requests,
        }
    }

    /// Counts one decision of `outcome` (`allow`, `ask`, `deny`).
    pub(crate) fn decided(&self, outcome: &'static str) {
        match outcome {
            "allow" => self.allow.inc(),
            "ask" => self.ask.inc(),
            _ => self.deny.inc(),
        };
    }

    pub(crate) fn latency(&self, seconds: f64) {
        self.latency.observe(seconds);
    }

    /// Counts a request refused for `why` (`too_large`, `malformed`, …).
    pub(crate) fn refused(&self, why: &'static str) {
        self.bad_requests.get_or_create(&[("reason", why)]).inc();
    }

    /// The text exposition format.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        if encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

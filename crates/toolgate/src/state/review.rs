//! Answers without a human: the [`Reviewer`] trait, the [`DenialBound`]
//! that stops a reviewer refusing forever, and [`PolicyReviewer`], a second
//! policy answering what the first asks about.

use std::sync::Arc;

use crate::call::Call;
use crate::decision::{Decision, Verdict};
use crate::engine::Engine;

/// What a reviewer said about one deferred call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Review {
    /// Whether the call may run.
    pub approve: bool,
    /// Text the model reads after the call's result (an approval) or as
    /// the refusal's reason.
    pub reason: String,
    /// A note carried on an approval.
    pub note: String,
    /// Who answered: `policy`, `agent` or `human`.
    pub by: &'static str,
}

/// Answers the calls a policy asked about, in place of a person.
pub trait Reviewer: Send + Sync {
    /// Reviews `call`, deferred by `verdict`. An error is a failed review:
    /// the call is refused, and the refusal counts toward the bound.
    ///
    /// # Errors
    ///
    /// Why the review could not be made.
    fn review(&self, call: &Call, verdict: &Verdict) -> Result<Review, String>;
}

/// When [`Supervisor::answers`](super::Supervisor::answers) stops
/// answering: after `consecutive` refusals in a row, or `total` refusals
/// within the last `window` reviews. A zero field is no bound on that
/// axis. Every answer that is not an approval counts as a refusal, a
/// failed review included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DenialBound {
    /// Refusals in a row that reach the bound.
    pub consecutive: usize,
    /// Refusals within `window` that reach the bound.
    pub total: usize,
    /// How many of the latest reviews `total` counts over.
    pub window: usize,
}

impl Default for DenialBound {
    /// Three in a row, or ten within the last fifty.
    fn default() -> DenialBound {
        DenialBound {
            consecutive: 3,
            total: 10,
            window: 50,
        }
    }
}

impl DenialBound {
    /// How many outcomes the bound reads back: enough for both axes.
    pub fn reads(&self) -> usize {
        self.window.max(self.consecutive).max(1)
    }

    /// Whether `history` (oldest first, `true` a refusal) reaches the bound.
    ///
    /// ```
    /// use toolgate::state::DenialBound;
    /// let b = DenialBound::default();
    /// assert!(!b.reached(&[true, true, false, true]));
    /// assert!(b.reached(&[false, true, true, true]));
    /// ```
    pub fn reached(&self, history: &[bool]) -> bool {
        let in_a_row = history.iter().rev().take_while(|r| **r).count();
        if self.consecutive > 0 && in_a_row >= self.consecutive {
            return true;
        }
        let skip = history.len().saturating_sub(self.window);
        let total = history.iter().skip(skip).filter(|r| **r).count();
        self.total > 0 && self.window > 0 && total >= self.total
    }
}

/// A reviewer that is a second policy: what the first policy asks about,
/// this one decides on its own. Its allow approves; its ask or deny
/// refuses, since nobody is there to answer a second question. A CI job or
/// a headless agent runs under a strict policy with a looser one (or a
/// stricter one) answering its questions.
///
/// ```
/// use std::sync::Arc;
/// use toolgate::state::{PolicyReviewer, Reviewer};
/// use toolgate::{Call, Decision, Engine, Policy};
///
/// let ci = Engine::build(&Policy::from_json(
///     r#"{"default": "deny", "allow": "read", "ask": "edit"}"#,
/// )?)?;
/// let reviewer = PolicyReviewer::new(Arc::new(ci));
/// let asked = toolgate::Verdict::new(Decision::Ask, "approval required by read");
/// assert!(reviewer.review(&Call::new("read", "{}"), &asked)?.approve);
/// assert!(!reviewer.review(&Call::new("edit", "{}"), &asked)?.approve);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct PolicyReviewer {
    engine: Arc<Engine<'static>>,
}

impl PolicyReviewer {
    /// A reviewer deciding with `engine`.
    pub fn new(engine: Arc<Engine<'static>>) -> PolicyReviewer {
        PolicyReviewer { engine }
    }
}

impl Reviewer for PolicyReviewer {
    fn review(&self, call: &Call, _: &Verdict) -> Result<Review, String> {
        let v = self.engine.would(call);
        let approve = v.decision == Decision::Allow;
        let reason = match v.decision {
            Decision::Allow | Decision::Deny => v.reason,
            // The second policy asking is no answer: nobody is there to
            // answer it, so the call is refused, saying why.
            Decision::Ask => format!("the reviewing policy would ask too ({})", v.reason),
        };
        Ok(Review {
            approve,
            reason,
            note: String::new(),
            by: "policy",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_counts_in_a_row_and_within_the_window() {
        let b = DenialBound {
            consecutive: 3,
            total: 4,
            window: 6,
        };
        assert!(!b.reached(&[true, true]));
        assert!(b.reached(&[true, true, true]));
        // Four refusals, never three in a row, within six.
        assert!(b.reached(&[true, true, false, true, true]));
        // The same four, the first outside the window of six.
        assert!(!b.reached(&[true, false, false, false, true, true, false, true, false]));
        let none = DenialBound {
            consecutive: 0,
            total: 0,
            window: 0,
        };
        assert!(!none.reached(&[true; 100]));
    }
}

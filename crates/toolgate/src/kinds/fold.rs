//! `path-fold` and `path-reach-fold`: the path kinds for a file system that
//! ignores case and Unicode normalisation (macOS, Windows), where
//! `Read(./.env)` must also meet `.ENV` and `.e\u{301}nv` must meet `.énv`
//! (`spec/claude-code.md` §4.4).

use crate::error::MatcherError;
use crate::registry::{CallContext, Lowering, MatcherKind};
use std::borrow::Cow;
use std::sync::Arc;
use unicode_normalization::UnicodeNormalization as _;

/// A kind that reads specifiers and values folded: composed (NFC), then
/// lowercased. It wraps another kind (the `path` or `path-reach` kind) and
/// folds before it reads: the call's value and working directory before
/// the inner kind canonicalises them (so `/REPO/.env` is inside `/repo`),
/// the canonical value after, and every specifier before the inner kind
/// parses or lowers it. The inner kind's home directory should be folded
/// ([`path_kinds`](super::path_kinds) folds it), so that a path under `~`
/// is inside a folded working directory there.
///
/// ```
/// use std::sync::Arc;
/// use toolgate::kinds::{FoldKind, PathKind};
/// use toolgate::{CallContext, MatcherKind};
/// let k = FoldKind::new("path-fold", Arc::new(PathKind::new()));
/// let cx = CallContext { cwd: Some("/Repo") };
/// let v = k.normalize("/repo/SRC/../.ENV", &cx).unwrap();
/// assert!(k.matches("./.env", &v));
/// assert!(k.matches("//REPO/.Env", &v));
/// ```
#[derive(Clone, Debug)]
pub struct FoldKind {
    name: String,
    inner: Arc<dyn MatcherKind>,
}

impl FoldKind {
    /// `inner`, folded, under the kind name `name`.
    pub fn new(name: impl Into<String>, inner: Arc<dyn MatcherKind>) -> FoldKind {
        FoldKind {
            name: name.into(),
            inner,
        }
    }
}

/// `text` composed (NFC) and lowercased: one spelling for every name a
/// case- and normalisation-insensitive file system reads as the same.
/// Borrowed when it is already folded.
pub fn fold(text: &str) -> Cow<'_, str> {
    let plain = text
        .bytes()
        .all(|b| b.is_ascii() && !b.is_ascii_uppercase());
    if plain {
        return Cow::Borrowed(text);
    }
    let folded: String = text.nfc().collect::<String>().to_lowercase();
    if folded == text {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(folded)
    }
}

impl MatcherKind for FoldKind {
    fn name(&self) -> &str {
        &self.name
    }

    fn lower(&self, spec: &str) -> Result<Lowering, MatcherError> {
        self.inner.lower(&fold(spec))
    }

    fn matches(&self, spec: &str, value: &str) -> bool {
        self.inner.matches(&fold(spec), &fold(value))
    }

    fn normalize<'v>(
        &self,
        value: &'v str,
        context: &CallContext<'_>,
    ) -> Result<Cow<'v, str>, MatcherError> {
        let cwd = context.cwd.map(fold);
        let inner_cx = CallContext {
            cwd: cwd.as_deref(),
        };
        let folded = fold(value);
        let canonical = self.inner.normalize(&folded, &inner_cx)?;
        let out = fold(&canonical).into_owned();
        Ok(if out == value {
            Cow::Borrowed(value)
        } else {
            Cow::Owned(out)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::{PathKind, PathReachKind};

    #[test]
    fn fold_composes_and_lowercases() {
        assert_eq!(fold(".env"), ".env");
        assert!(matches!(fold(".env"), Cow::Borrowed(_)));
        assert_eq!(fold(".ENV"), ".env");
        assert_eq!(fold("Cafe\u{301}"), "caf\u{e9}");
        assert_eq!(fold("CAF\u{c9}"), "caf\u{e9}");
    }

    #[test]
    fn paths_meet_in_any_case_and_any_normalisation() {
        let k = FoldKind::new("path-fold", Arc::new(PathKind::with_home("/users/me")));
        let cx = CallContext {
            cwd: Some("/Users/Me/Proj"),
        };
        for spelling in [
            "/users/me/proj/.ENV",
            "./.Env",
            "~/PROJ/.env",
            "/USERS/ME/PROJ/sub/../.env",
        ] {
            let v = k.normalize(spelling, &cx).unwrap();
            assert!(k.matches(".env", &v), "{spelling}: {v:?}");
            assert!(k.matches("./.env", &v), "{spelling}: {v:?}");
            assert!(k.matches("//Users/Me/Proj/.env", &v), "{spelling}: {v:?}");
        }
        let v = k.normalize("./cafe\u{301}.txt", &cx).unwrap();
        assert!(k.matches("./CAF\u{c9}.txt", &v));
        assert!(!k.matches("./cafe.txt", &v));
        let reach = FoldKind::new(
            "path-reach-fold",
            Arc::new(PathReachKind::with_home("/users/me")),
        );
        let q = reach.normalize("./*.ENV", &cx).unwrap();
        assert!(reach.matches(".env", &q));
    }
}

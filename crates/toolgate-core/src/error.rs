//! The error types of the runtime's fallible calls, one per kind of
//! failure, each carrying the lowercase message that names what the input
//! held and what to do. They replace bare `String` errors so that a caller
//! can tell a malformed call from a malformed document from a matcher's
//! refusal by type, and so that each can grow a kind without breaking the
//! signatures.
//!
//! The types are written by hand rather than derived: the derive macros
//! would add five crates to this crate's dependency tree.

macro_rules! message_error {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub struct $name {
            message: String,
        }

        impl $name {
            /// An error with `message`.
            pub fn new(message: impl Into<String>) -> $name {
                $name {
                    message: message.into(),
                }
            }

            /// The message.
            pub fn message(&self) -> &str {
                &self.message
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.message)
            }
        }

        impl std::error::Error for $name {}

        impl From<String> for $name {
            fn from(message: String) -> $name {
                $name { message }
            }
        }

        impl From<&str> for $name {
            fn from(message: &str) -> $name {
                $name::new(message)
            }
        }

        // A message is what a deny's reason carries: any of these errors
        // becomes one where a reason is wanted.
        impl From<$name> for String {
            fn from(e: $name) -> String {
                e.message
            }
        }
    };
}

message_error!(
    /// A call (or a request, an envelope, a hook payload) that cannot be
    /// read: not JSON, not an object, a member missing or malformed, a NUL
    /// byte, a tool or its arguments named twice. The decision side answers
    /// it with a deny.
    ///
    /// ```
    /// use toolgate_core::Call;
    /// let err = Call::from_json(r#"{"args": {}}"#).unwrap_err();
    /// assert_eq!(err.to_string(), "the call has no `tool`");
    /// ```
    IntakeError
);

message_error!(
    /// Text that is not strict JSON: a syntax error (with its line and
    /// column), a duplicate key, invalid UTF-8.
    JsonError
);

message_error!(
    /// A matcher kind's refusal: a specifier that can never match
    /// ([`crate::MatcherKind::lower`], which refuses the policy), or a value
    /// the kind cannot read ([`crate::MatcherKind::normalize`], which denies
    /// the call).
    MatcherError
);

message_error!(
    /// A splitter's refusal of a call it cannot split into subjects; the
    /// call is denied with the message as its reason.
    SplitError
);

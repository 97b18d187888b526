//! The built-in secrets catalogue: the credential formats a coding agent
//! meets, each a rule with a literal anchor, a type and a severity
//! (`spec/guards.md` §4 lists them).
//!
//! Formats come from the vendors' published token shapes; where a secret
//! has no prefix of its own (an AWS secret key, a password), the rule is
//! anchored on the name it is assigned to and only the value is reported.
//! Specific rules come before generic ones: of two findings with the same
//! span, the earlier rule's is kept.

use super::{RuleSpec, Severity};

/// One catalogue entry, as written below.
struct Entry {
    name: &'static str,
    kind: &'static str,
    dlp: &'static str,
    severity: Severity,
    before: Option<&'static str>,
    value: &'static str,
    after: Option<&'static str>,
    max_len: Option<usize>,
    min_entropy: Option<f64>,
}

const fn e(
    name: &'static str,
    kind: &'static str,
    dlp: &'static str,
    severity: Severity,
    value: &'static str,
) -> Entry {
    Entry {
        name,
        kind,
        dlp,
        severity,
        before: None,
        value,
        after: None,
        max_len: None,
        min_entropy: None,
    }
}

/// What may follow `=`/`:` before a value: optional quotes, escaped in JSON.
macro_rules! assign {
    () => {
        r#"(?:\\?["'])?[ \t]*(?::=|=>|=|:)[ \t]*(?:\\?["'])?"#
    };
}

const ENTRIES: &[Entry] = &[
    e(
        "aws-access-key-id",
        "aws-access-key-id",
        "AWS_ACCESS_KEY",
        Severity::High,
        r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b",
    ),
    Entry {
        before: Some(concat!(
            r"(?:aws_secret_access_key|AWS_SECRET_ACCESS_KEY|aws_secret_key|AWS_SECRET_KEY|SecretAccessKey|secret_access_key|SECRET_ACCESS_KEY)",
            assign!()
        )),
        max_len: Some(40),
        ..e(
            "aws-secret-access-key",
            "aws-secret-access-key",
            "AWS_SECRET_KEY",
            Severity::High,
            r"[A-Za-z0-9/+]{40,}",
        )
    },
    Entry {
        before: Some(r#"\\?"private_key_id\\?"[ \t]*:[ \t]*\\?""#),
        after: Some(r#"\\?""#),
        ..e(
            "gcp-service-account",
            "gcp-service-account",
            "GCP_SERVICE_ACCOUNT",
            Severity::High,
            r"[a-f0-9]{40}",
        )
    },
    e(
        "gcp-api-key",
        "gcp-api-key",
        "GCP_API_KEY",
        Severity::High,
        r"\bAIza[0-9A-Za-z_-]{35}",
    ),
    Entry {
        before: Some(r"AccountKey="),
        ..e(
            "azure-storage-key",
            "azure-storage-connection-string",
            "AZURE_STORAGE_KEY",
            Severity::High,
            r"[A-Za-z0-9+/]{86}==",
        )
    },
    e(
        "github-token",
        "github-token",
        "GITHUB_TOKEN",
        Severity::High,
        r"gh[pousr]_[A-Za-z0-9]{36}\b",
    ),
    e(
        "github-fine-grained-token",
        "github-token",
        "GITHUB_TOKEN",
        Severity::High,
        r"github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}\b",
    ),
    Entry {
        max_len: Some(6 + 80),
        ..e(
            "gitlab-token",
            "gitlab-token",
            "GITLAB_TOKEN",
            Severity::High,
            r"glpat-[A-Za-z0-9_-]{20,}",
        )
    },
    e(
        "npm-token",
        "npm-token",
        "NPM_TOKEN",
        Severity::High,
        r"npm_[A-Za-z0-9]{36}\b",
    ),
    Entry {
        max_len: Some(255),
        ..e(
            "slack-token",
            "slack-token",
            "SLACK_TOKEN",
            Severity::High,
            r"xox[baprs]-[0-9]{6,}-[0-9A-Za-z-]{10,}",
        )
    },
    e(
        "slack-webhook",
        "slack-webhook",
        "SLACK_WEBHOOK",
        Severity::Medium,
        r"hooks\.slack\.com/(?:services|workflows)/T[A-Z0-9]{8,12}/[AB][A-Z0-9]{8,12}/[A-Za-z0-9]{24}\b",
    ),
    Entry {
        max_len: Some(8 + 99),
        ..e(
            "stripe-key",
            "stripe-key",
            "STRIPE_KEY",
            Severity::High,
            r"[sr]k_live_[A-Za-z0-9]{24,}",
        )
    },
    e(
        "twilio-api-key",
        "twilio-key",
        "TWILIO_KEY",
        Severity::High,
        r"\bSK[0-9a-fA-F]{32}\b",
    ),
    e(
        "twilio-account-sid",
        "twilio-key",
        "TWILIO_KEY",
        Severity::Low,
        r"\bAC[0-9a-f]{32}\b",
    ),
    e(
        "sendgrid-key",
        "sendgrid-key",
        "SENDGRID_KEY",
        Severity::High,
        r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
    ),
    Entry {
        max_len: Some(7 + 8 + 140),
        ..e(
            "anthropic-key",
            "anthropic-key",
            "ANTHROPIC_KEY",
            Severity::High,
            r"sk-ant-(?:api|admin|oat|sid)[0-9]{2}-[A-Za-z0-9_-]{80,}",
        )
    },
    Entry {
        max_len: Some(200),
        ..e(
            "openai-project-key",
            "openai-key",
            "OPENAI_KEY",
            Severity::High,
            r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}",
        )
    },
    e(
        "openai-key",
        "openai-key",
        "OPENAI_KEY",
        Severity::High,
        r"\bsk-[A-Za-z0-9]{48}\b",
    ),
    e(
        "huggingface-token",
        "huggingface-token",
        "HUGGINGFACE_TOKEN",
        Severity::High,
        r"\bhf_[A-Za-z0-9]{34}\b",
    ),
    e(
        "private-key",
        "private-key",
        "PRIVATE_KEY",
        Severity::High,
        r"-----BEGIN[ A-Z0-9]{0,32}PRIVATE KEY(?: BLOCK)?-----(?:[\x00-\xff]*?-----END[ A-Z0-9]{0,32}PRIVATE KEY(?: BLOCK)?-----)?",
    ),
    e(
        "jwt",
        "jwt",
        "JWT",
        Severity::Medium,
        r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
    ),
    Entry {
        before: Some(
            r#"\b(?:postgres|postgresql|mysql|mariadb|mongodb|mongodb\+srv|redis|rediss|amqp|amqps|mssql|sqlserver)://[^\s:/@"'<>]{1,64}:"#,
        ),
        after: Some("@"),
        max_len: Some(128),
        ..e(
            "database-url",
            "database-url-password",
            "DATABASE_URL",
            Severity::High,
            r#"[^\s:/@"'<>${}*\\]{3,}"#,
        )
    },
    Entry {
        before: Some(concat!(
            r"(?:password|passwd|PASSWORD|Password|PASSWD|secret|SECRET|Secret|token|TOKEN|Token|api_key|API_KEY|apikey|APIKEY|ApiKey)(?:[_.-][A-Za-z0-9]+){0,3}",
            assign!()
        )),
        after: Some(r#"(?:\\?["'`]|[\s,;})&]|$)"#),
        max_len: Some(128),
        min_entropy: Some(3.3),
        ..e(
            "generic-secret",
            "generic-secret",
            "GENERIC_API_KEY",
            Severity::Medium,
            r"[A-Za-z0-9+/=_.!@#%^&*~-]{8,}",
        )
    },
];

/// The catalogue's rules, in order, each named `secrets/<name>`, with the
/// type Rubric's DLP fields report for it.
pub fn rules() -> Vec<(RuleSpec, &'static str)> {
    ENTRIES
        .iter()
        .map(|x| {
            (
                RuleSpec {
                    name: x.name.to_string(),
                    kind: x.kind.to_string(),
                    severity: x.severity,
                    before: x.before.map(str::to_string),
                    value: x.value.to_string(),
                    after: x.after.map(str::to_string),
                    max_len: x.max_len,
                    min_entropy: x.min_entropy,
                    note: None,
                },
                x.dlp,
            )
        })
        .collect()
}

/// The types the catalogue reports.
pub fn types() -> Vec<&'static str> {
    let mut t: Vec<&'static str> = ENTRIES.iter().map(|x| x.kind).collect();
    t.sort_unstable();
    t.dedup();
    t
}

//! GitHub Actions workflow commands: one `::error`/`::warning`/`::notice` line per finding, which the Actions
//! runner turns into annotations on the run and, for files in the repository, on the pull request.
//! Data and property values are escaped as the runner expects (`%`, CR, LF; and `:` `,` in properties), after
//! the control characters of the data itself are shown escaped ([`escape`]): the lines of an annotation are
//! the report's own, and the log they land in is read on terminals too.

use super::model::Report;
use super::sane::escape;
use crate::findings::Severity;
use crate::findings::count;
use std::io::{self, Write};

fn escape_data(s: &str) -> String {
    s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// Writes one workflow command per finding, then a plain summary line.
pub fn render(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    for f in &report.findings {
        let command = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "notice",
        };
        let mut props = vec![format!(
            "title={}",
            escape_property(&escape(&format!("{} {}", f.code, f.slug)))
        )];
        if let Some(path) = &f.path {
            // A wheel member is not a repository file: annotate the wheel.
            let file = path.split('!').next().unwrap_or(path);
            props.insert(0, format!("file={}", escape_property(&escape(file))));
        }
        let text = f.plain_text("", |s| escape(s).into_owned());
        writeln!(out, "::{command} {}::{}", props.join(","), escape_data(&text))?;
    }
    let s = report.summary();
    writeln!(
        out,
        "cudadiag: {}, {}, {}, {}",
        count(report.facts.binaries.len(), "binary", "binaries"),
        count(s.errors, "error", "errors"),
        count(s.warnings, "warning", "warnings"),
        count(s.notes, "note", "notes")
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn escaping() {
        assert_eq!(super::escape_data("50%\nx"), "50%25%0Ax");
        assert_eq!(super::escape_property("a:b,c"), "a%3Ab%2Cc");
        // Data's own newlines and escapes are shown, not obeyed: one line per annotation, no ESC byte.
        assert_eq!(
            super::escape_data(&super::escape("lib\x1b]0;x\x07\nfake.so")),
            "lib\\e]0;x\\x07\\nfake.so"
        );
    }
}

//! JUnit XML, for CI systems that show test results (GitLab, Jenkins, Azure). One test case per audited
//! binary: errors are failures, warnings and notes go to `system-out`. Findings not tied to a binary (an unused
//! waiver, say) belong to a "policy" test case.

use super::model::Report;
use crate::findings::{Finding, Severity};
use std::io::{self, Write};

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Newlines as character references: the same text to an XML reader, but no physical line of the
            // file is data's own (a path with `\n::error …` in it would otherwise be a workflow command to a
            // GitHub runner that shows the file, and an attribute's raw newline is read back as a space).
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            // Not an XML 1.0 character (C0 controls but tab and newlines, U+FFFE, U+FFFF): a replacement
            // character keeps the spot visible (a path with a control byte in its name) and the file valid.
            c if ((c as u32) < 0x20 && c != '\n' && c != '\t' && c != '\r')
                || c == '\u{FFFE}'
                || c == '\u{FFFF}' =>
            {
                out.push('\u{FFFD}')
            }
            c => out.push(c),
        }
    }
    out
}

fn describe(f: &Finding) -> String {
    format!(
        "{} [{} {}]: {}",
        f.severity,
        f.code,
        f.slug,
        f.plain_text("  ", str::to_string)
    )
}

/// Writes the report as a JUnit XML document.
pub fn render(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let mut cases: Vec<(String, Vec<&Finding>)> = report
        .facts
        .binaries
        .iter()
        .map(|b| (b.path.clone(), Vec::new()))
        .collect();
    for f in &report.findings {
        let name = f.path.clone().unwrap_or_else(|| "policy".to_string());
        match cases.iter_mut().find(|(n, _)| *n == name) {
            Some((_, list)) => list.push(f),
            None => cases.push((name, vec![f])),
        }
    }
    let failures = cases
        .iter()
        .filter(|(_, fs)| fs.iter().any(|f| f.severity == Severity::Error))
        .count();
    writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
    writeln!(
        out,
        r#"<testsuites name="cudadiag" tests="{}" failures="{failures}">"#,
        cases.len()
    )?;
    writeln!(
        out,
        r#"  <testsuite name="cudadiag audit" tests="{}" failures="{failures}" errors="0">"#,
        cases.len()
    )?;
    for (name, fs) in &cases {
        writeln!(
            out,
            r#"    <testcase classname="cudadiag" name="{}">"#,
            escape(name)
        )?;
        let errors: Vec<&&Finding> = fs.iter().filter(|f| f.severity == Severity::Error).collect();
        if !errors.is_empty() {
            let summary = errors
                .iter()
                .map(|f| f.slug.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            let body = errors.iter().map(|f| describe(f)).collect::<Vec<_>>().join("\n");
            writeln!(
                out,
                r#"      <failure message="{}" type="{}">{}</failure>"#,
                escape(&summary),
                escape(errors[0].code.as_str()),
                escape(&body)
            )?;
        }
        let rest: Vec<String> = fs
            .iter()
            .filter(|f| f.severity != Severity::Error)
            .map(|f| describe(f))
            .collect();
        if !rest.is_empty() {
            writeln!(out, "      <system-out>{}</system-out>", escape(&rest.join("\n")))?;
        }
        writeln!(out, "    </testcase>")?;
    }
    writeln!(out, "  </testsuite>")?;
    writeln!(out, "</testsuites>")
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_markup_and_control_characters() {
        assert_eq!(
            super::escape("a<b>&\"'\u{1}c\u{FFFE}\u{FFFF}\u{FFFD}\u{10000}\t\n::error::x\r"),
            "a&lt;b&gt;&amp;&quot;&apos;\u{FFFD}c\u{FFFD}\u{FFFD}\u{FFFD}\u{10000}\t&#10;::error::x&#13;"
        );
    }
}

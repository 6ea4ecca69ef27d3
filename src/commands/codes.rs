//! `cudadiag codes`: the finding catalogue.

use super::outcome::Outcome;
use crate::cli::CodesArgs;
use crate::diagnose::ToolError;
use crate::findings::CATALOGUE;
use crate::report::{self, DocFormat};
use std::io::Write;

pub fn run(args: &CodesArgs, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    match args.format {
        DocFormat::Json => {
            let doc =
                serde_json::json!({ "schema_version": report::json::SCHEMA_VERSION, "codes": CATALOGUE });
            let text = serde_json::to_string_pretty(&doc)?;
            report::text(out, &format!("{text}\n"))?;
        }
        DocFormat::Human => {
            let mut text = String::new();
            for c in CATALOGUE {
                text.push_str(&format!(
                    "{:<6} {:<28} {:<8} {}\n",
                    c.code,
                    c.slug,
                    c.severity.as_str(),
                    c.summary
                ));
            }
            report::text(out, &text)?;
        }
    }
    Ok(Outcome::Clean)
}

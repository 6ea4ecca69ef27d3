//! Colour, decided once: `--color always|never|auto`, and `auto` honours `NO_COLOR` and whether the output is a
//! terminal.

use owo_colors::OwoColorize;

/// The `--color` choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour when writing to a terminal and `NO_COLOR` is unset.
    #[default]
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

/// Paints text, or not.
#[derive(Debug, Clone, Copy, Default)]
pub struct Paint {
    enabled: bool,
}

impl Paint {
    /// Decides once from the choice, whether stdout is a terminal, and `NO_COLOR`.
    pub fn new(choice: ColorChoice, is_terminal: bool, no_color: bool) -> Paint {
        let enabled = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => is_terminal && !no_color,
        };
        Paint { enabled }
    }

    /// Decides for one output stream from the choice, whether that stream is a terminal, and the environment's
    /// `NO_COLOR` (set and not empty turns colour off, as no-color.org asks).
    pub fn from_env(choice: ColorChoice, is_terminal: bool) -> Paint {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Paint::new(choice, is_terminal, no_color)
    }

    /// No colour at all.
    pub fn plain() -> Paint {
        Paint { enabled: false }
    }

    /// Whether colour sequences are written.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// What is painted is data more often than not (a path, a SONAME): it is escaped first
    /// ([`escape`](super::escape)), so that only the colour reaches the terminal as a sequence.
    fn apply(&self, s: &str, f: impl Fn(&str) -> String) -> String {
        let s = super::sane::escape(s);
        if self.enabled { f(&s) } else { s.into_owned() }
    }

    /// Errors.
    pub fn error(&self, s: &str) -> String {
        self.apply(s, |s| s.red().bold().to_string())
    }
    /// Warnings.
    pub fn warning(&self, s: &str) -> String {
        self.apply(s, |s| s.yellow().bold().to_string())
    }
    /// Notes.
    pub fn note(&self, s: &str) -> String {
        self.apply(s, |s| s.cyan().bold().to_string())
    }
    /// Emphasis (names, paths).
    pub fn bold(&self, s: &str) -> String {
        self.apply(s, |s| s.bold().to_string())
    }
    /// De-emphasis (evidence, offsets).
    pub fn dim(&self, s: &str) -> String {
        self.apply(s, |s| s.dimmed().to_string())
    }
    /// Good news.
    pub fn good(&self, s: &str) -> String {
        self.apply(s, |s| s.green().to_string())
    }
}

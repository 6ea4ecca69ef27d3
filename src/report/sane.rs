//! What reaches a terminal: data from inspected files shown, never obeyed.
//!
//! A SONAME, a file name, a wheel member, a `METADATA` field or a GPU model string comes from whoever made the
//! file or the machine. Written raw to a terminal, `ESC ] 0 ; … BEL` retitles it, `ESC [ 2 J` clears it, a
//! newline forges a line of the report, and the Unicode bidirectional overrides reorder what is shown
//! ("Trojan Source", CVE-2021-42574). So every string of data printed for people goes through [`escape`]
//! (directly, as [`Sane`], or through [`Paint`](super::Paint), which escapes what it colours), and the human
//! and `github` renderers write through [`Guard`], which escapes whatever control character still gets
//! through, letting only the colour sequences [`Paint`](super::Paint) itself emits pass. JSON, SARIF and JUnit
//! have their own escaping and carry the data unchanged.
//!
//! Escaped forms: `\n`, `\r`, `\t`, `\e` (ESC), `\xNN` for the other C0 controls and DEL, `\u{NN}` for the C1
//! controls (U+0080–U+009F, which some terminals obey as 8-bit CSI/OSC), and `\u{NNNN}` for the bidi controls
//! (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069). Invalid UTF-8 in names is already replaced by
//! U+FFFD where the bytes became a `String`.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, Write};

/// Whether `c` must not reach a terminal as itself.
fn is_hostile(c: char) -> bool {
    c.is_control() // C0, DEL and C1
        || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\x1b' => out.push_str("\\e"),
        c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
        c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
    }
}

/// `s` with every control character (newlines included) and bidi control shown escaped.
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_hostile) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_hostile(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The first `max` characters of `s` (all of it when shorter): the one way human output cuts text. Cutting
/// by bytes (`&s[..12]`) panics inside a multibyte character, and the text cut is data (a config's file name,
/// a digest), so every renderer cuts through here.
pub fn prefix(s: &str, max: usize) -> &str {
    s.char_indices().nth(max).map_or(s, |(cut, _)| &s[..cut])
}

/// At most `max` characters of `s`, escaped; a longer `s` ends with `… (N bytes)`. For echoing what a user
/// (or a script) passed, which may be megabytes.
pub fn truncated(s: &str, max: usize) -> String {
    let cut = prefix(s, max);
    if cut.len() == s.len() {
        escape(s).into_owned()
    } else {
        format!("{}… ({} bytes)", escape(cut), s.len())
    }
}

/// Displays a string of data escaped: `format!("{}", Sane(&soname))`.
#[derive(Debug, Clone, Copy)]
pub struct Sane<'a>(pub &'a str);

impl fmt::Display for Sane<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Padding (`{:<12}`) applies to the escaped text.
        f.pad(&escape(self.0))
    }
}

/// A writer for terminal formats: passes text through, except control characters other than the newline,
/// which it escapes; with `colour`, `ESC [ digits ; … m` (the SGR sequences [`Paint`](super::Paint) emits)
/// pass too. The last line of defence: a renderer that forgets [`Sane`] still cannot move the cursor, retitle
/// the terminal or write an OSC 8 link.
pub struct Guard<'a> {
    inner: &'a mut dyn Write,
    colour: bool,
}

impl<'a> Guard<'a> {
    /// Guards `inner`; `colour` lets SGR colour sequences through.
    pub fn new(inner: &'a mut dyn Write, colour: bool) -> Guard<'a> {
        Guard { inner, colour }
    }
}

/// The length of an SGR sequence at the start of `s` (`ESC [ [0-9;]* m`), if one is there.
fn sgr_len(s: &str) -> Option<usize> {
    let rest = s.strip_prefix("\x1b[")?;
    let params = rest
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b';')
        .count();
    (rest.as_bytes().get(params) == Some(&b'm')).then_some(2 + params + 1)
}

impl Write for Guard<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // Formatting hands over whole `str`s; bytes that are not UTF-8 are shown replaced.
        let text = String::from_utf8_lossy(buf);
        if !text.chars().any(|c| c != '\n' && is_hostile(c)) {
            self.inner.write_all(text.as_bytes())?;
            return Ok(buf.len());
        }
        let mut out = String::with_capacity(text.len() + 16);
        let mut rest: &str = &text;
        while let Some(c) = rest.chars().next() {
            if self.colour
                && let Some(n) = sgr_len(rest)
            {
                out.push_str(&rest[..n]);
                rest = &rest[n..];
                continue;
            }
            if c != '\n' && is_hostile(c) {
                push_escaped(&mut out, c);
            } else {
                out.push(c);
            }
            rest = &rest[c.len_utf8()..];
        }
        self.inner.write_all(out.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_control_character_is_escaped() {
        for n in 0..=0x9fu32 {
            let c = char::from_u32(n).unwrap();
            let s = escape(&c.to_string()).into_owned();
            let printable = (0x20..0x7f).contains(&n);
            if printable {
                assert_eq!(s, c.to_string(), "{n:#x} is printable");
            } else {
                assert!(s.starts_with('\\'), "{n:#x} gave {s:?}");
                assert!(s.chars().all(|c| c.is_ascii_graphic()), "{n:#x} gave {s:?}");
            }
        }
        assert_eq!(escape("a\x1b]0;pwned\x07b"), "a\\e]0;pwned\\x07b");
        assert_eq!(escape("\u{9b}2J\x7f"), "\\u{9b}2J\\x7f");
        assert_eq!(escape("x\ny\tz\r"), "x\\ny\\tz\\r");
        assert!(matches!(escape("libcudart.so.12 → ok"), Cow::Borrowed(_)));
    }

    #[test]
    fn bidi_overrides_are_escaped() {
        for c in [
            '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}', '\u{2066}', '\u{2069}',
        ] {
            let s = escape(&format!("lib{c}os.so")).into_owned();
            assert_eq!(s, format!("lib\\u{{{:x}}}os.so", c as u32));
        }
        assert_eq!(escape("日本語 é"), "日本語 é");
    }

    #[test]
    fn sane_pads_the_escaped_text() {
        assert_eq!(format!("[{:<6}]", Sane("a\x07")), "[a\\x07 ]");
    }

    #[test]
    fn truncated_says_how_long_the_whole_was() {
        assert_eq!(truncated("short", 200), "short");
        let long = "x".repeat(5_000_000);
        let t = truncated(&long, 200);
        assert!(
            t.starts_with(&"x".repeat(200)) && t.ends_with("… (5000000 bytes)"),
            "{t}"
        );
        assert_eq!(truncated("\x1b[2J", 200), "\\e[2J");
    }

    #[test]
    fn guard_lets_colour_through_and_nothing_else() {
        let mut buf = Vec::new();
        let mut g = Guard::new(&mut buf, true);
        g.write_all(b"\x1b[1;31merror\x1b[0m \x1b]0;t\x07 \x1b[2J\n\xc2\x9b")
            .unwrap();
        let s = String::from_utf8(buf).unwrap();
        assert_eq!(s, "\x1b[1;31merror\x1b[0m \\e]0;t\\x07 \\e[2J\n\\u{9b}");
        let mut buf = Vec::new();
        Guard::new(&mut buf, false).write_all(b"\x1b[1m").unwrap();
        assert_eq!(buf, b"\\e[1m");
    }

    #[test]
    fn prefix_cuts_between_characters() {
        assert_eq!(prefix("aéé", 2), "aé");
        assert_eq!(prefix("日本語", 5), "日本語");
        assert_eq!(prefix("", 3), "");
        // Every cut of a mixed string is a prefix on a boundary.
        let s = "a\u{e9}\u{65e5}\u{1f600}\u{301}\x1b";
        for n in 0..8 {
            assert!(s.starts_with(prefix(s, n)));
            assert_eq!(prefix(s, n).chars().count(), n.min(s.chars().count()));
        }
    }
}

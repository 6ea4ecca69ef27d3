//! Stepping over JSON values without building them, for a reader that needs a few fields of a large
//! document: `fleet` wants a report's driver version, GPU names, host name and finding slugs, a few hundred
//! bytes of 160 KB, 130 KB of which is the library catalogue (`host.facts.libraries`).
//!
//! `serde_json` steps over a value it does not keep (`IgnoredAny`; `RawValue` is the same walk, `ignore_value`,
//! with the text kept) one token at a time, whitespace one byte at a time: about 10 instructions a byte of a
//! report (callgrind), 58% of `fleet`'s time. Two ways here:
//! - [`Skim::value`] checks the text exactly as `serde_json` checks a value it ignores (the escapes and control
//!   characters of strings, the number grammar, `true`/`false`/`null`, commas and colons where they belong,
//!   the four whitespace characters, no depth limit), with strings and indentation read eight bytes at a time
//!   (SWAR: one `u64` compare finds a quote, backslash or control character in eight bytes). It is about as
//!   fast as `serde_json` (9 instructions a byte) and is used for the small values around the ones kept.
//! - [`Skim::array_by_brackets`] finds the end of an array by its square brackets and strings alone, eight
//!   bytes at a time, checking nothing else: 5 instructions a byte. It is for the one large value never read,
//!   and makes the one difference from `serde_json` that `fleet::head` chooses.
//!
//! Anything [`Skim`] does not take gives `None`, and the caller decodes the text with `serde_json`, whose
//! answer, or error message, is the one used. `tests` checks it against `serde_json` on every short text and on
//! every one-byte change to a document. The text must be UTF-8 (`&str`), as `serde_json::from_str` requires.

/// A position in JSON text that moves over whitespace, object members and values.
#[derive(Debug, Clone)]
pub struct Skim<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Skim<'a> {
    /// A skim from the start of `text`.
    pub fn new(text: &'a str) -> Skim<'a> {
        Skim { text, at: 0 }
    }

    /// The next byte after whitespace (the position moves over the whitespace), or `None` at the end.
    pub fn peek(&mut self) -> Option<u8> {
        let b = self.text.as_bytes();
        while let Some(&c) = b.get(self.at) {
            if !is_ws(c) {
                return Some(c);
            }
            self.at += 1;
        }
        None
    }

    /// Is only whitespace left?
    pub fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }

    /// Steps over one value, checked as `serde_json` checks a value it ignores; its text, or `None` where the
    /// text is not one value.
    pub fn value(&mut self) -> Option<&'a str> {
        let b = self.text.as_bytes();
        let end = match self.peek()? {
            b'{' | b'[' => container_end(b, self.at)?,
            b'"' => string_end(b, self.at)?,
            _ => scalar_end(b, self.at)?,
        };
        let start = std::mem::replace(&mut self.at, end);
        // Both ends are at ASCII bytes (a bracket, a quote, a digit or letter), so on character boundaries.
        self.text.get(start..end)
    }

    /// Steps over an array found by its brackets alone, for one that is large and never read (a report's
    /// library catalogue): its strings are stepped over (with their escapes), the square brackets outside them
    /// counted, nothing else checked. Its text, or `None` where the text does not start an array or ends
    /// before it closes.
    ///
    /// Most 64-byte blocks of such an array hold no bracket and no backslash: then only the number of quotes
    /// matters (an odd number turns "in a string" over), and both are found by comparisons over the whole
    /// block that the compiler makes vector instructions (a byte in `[` `\` `]`, one range; quotes counted).
    /// Only a block with a bracket or backslash, or one that starts escaped, is walked byte by byte.
    pub fn array_by_brackets(&mut self) -> Option<&'a str> {
        if self.peek()? != b'[' {
            return None;
        }
        let b = self.text.as_bytes();
        let start = self.at;
        let mut walk = Brackets::default();
        let mut i = start;
        let end = loop {
            let Some(block) = b.get(i..i + BLOCK) else {
                break walk.bytes(b.get(i..)?, i)?;
            };
            let (quotes, marks) = block.iter().fold((0u8, 0u8), |(q, m), &c| {
                // `[` `\` `]` are 0x5b, 0x5c, 0x5d.
                (q ^ u8::from(c == b'"'), m | u8::from(c.wrapping_sub(b'[') < 3))
            });
            if marks == 0 && !walk.escaped {
                walk.in_string ^= quotes == 1;
            } else if let Some(end) = walk.bytes(block, i) {
                break end;
            }
            i += BLOCK;
        };
        self.at = end;
        self.text.get(start..end)
    }

    /// Walks the object at the position: `member(key, skim)` for each member, with the skim at the member's
    /// value, which `member` must step over ([`Skim::value`], or [`Skim::object`] to walk it). `None` where
    /// the text is not an object, a key holds an escape (`serde_json` compares keys unescaped), or `member`
    /// says `None`.
    pub fn object(&mut self, mut member: impl FnMut(&'a str, &mut Skim<'a>) -> Option<()>) -> Option<()> {
        let b = self.text.as_bytes();
        if self.peek()? != b'{' {
            return None;
        }
        self.at += 1;
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        loop {
            if self.peek()? != b'"' {
                return None;
            }
            let end = string_end(b, self.at)?;
            let key = self.text.get(self.at + 1..end - 1)?;
            if key.contains('\\') {
                return None;
            }
            self.at = end;
            if self.peek()? != b':' {
                return None;
            }
            self.at += 1;
            member(key, self)?;
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }
}

/// JSON's whitespace: exactly these four (`serde_json` accepts no other).
fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\n' | b'\r' | b'\t')
}

/// The end (one past the closing quote) of the string whose opening quote is at `start`: eight bytes at a
/// time to the next quote, backslash or control character.
#[inline(always)]
fn string_end(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    loop {
        if let Some(chunk) = b.get(i..i + 8) {
            let w = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
            let stop = equal(w, b'"') | equal(w, b'\\') | below(w, 0x20);
            if stop == 0 {
                i += 8;
                continue;
            }
            i += (stop.trailing_zeros() / 8) as usize;
        }
        match *b.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' => i = escape_end(b, i)?,
            c if c < 0x20 => return None,
            _ => i += 1,
        }
    }
}

/// The end of the escape whose backslash is at `i`: `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, or `\u`
/// and four hexadecimal digits (whether they make a valid code point is not checked for a value ignored).
fn escape_end(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i + 1)? {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(i + 2),
        b'u' => {
            let hex = b.get(i + 2..i + 6)?;
            hex.iter().all(u8::is_ascii_hexdigit).then_some(i + 6)
        }
        _ => None,
    }
}

/// The end of the number or literal at `start`: `true`, `false`, `null`, or
/// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`. What follows is the caller's to check.
fn scalar_end(b: &[u8], start: usize) -> Option<usize> {
    let literal = |word: &[u8]| b.get(start..start + word.len()).filter(|w| *w == word);
    match *b.get(start)? {
        b't' => literal(b"true").map(|_| start + 4),
        b'f' => literal(b"false").map(|_| start + 5),
        b'n' => literal(b"null").map(|_| start + 4),
        b'-' | b'0'..=b'9' => number_end(b, start),
        _ => None,
    }
}

fn number_end(b: &[u8], start: usize) -> Option<usize> {
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    let digits = |mut i: usize| {
        while digit(i) {
            i += 1;
        }
        i
    };
    let mut i = start + usize::from(b[start] == b'-');
    match *b.get(i)? {
        // One leading zero, and no digit after it.
        b'0' if digit(i + 1) => return None,
        b'0' => i += 1,
        b'1'..=b'9' => i = digits(i),
        _ => return None,
    }
    if b.get(i) == Some(&b'.') {
        let from = i + 1;
        i = digits(from);
        if i == from {
            return None;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let from = i;
        i = digits(from);
        if i == from {
            return None;
        }
    }
    Some(i)
}

/// Bytes taken at once by [`Skim::array_by_brackets`].
const BLOCK: usize = 64;

/// Where [`Skim::array_by_brackets`] is: how many arrays deep, in a string or not, after a backslash or not.
#[derive(Default)]
struct Brackets {
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl Brackets {
    /// Walks `bytes` (at `base` in the text) one at a time; the end of the outermost array when it closes here.
    fn bytes(&mut self, bytes: &[u8], base: usize) -> Option<usize> {
        for (k, &c) in bytes.iter().enumerate() {
            if self.escaped {
                self.escaped = false;
            } else if self.in_string {
                match c {
                    b'"' => self.in_string = false,
                    b'\\' => self.escaped = true,
                    _ => {}
                }
            } else {
                match c {
                    b'"' => self.in_string = true,
                    b'[' => self.depth += 1,
                    b']' => {
                        self.depth = self.depth.checked_sub(1)?;
                        if self.depth == 0 {
                            return Some(base + k + 1);
                        }
                    }
                    _ => {}
                }
            }
        }
        None
    }
}

/// What the grammar expects next inside a container.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Want {
    /// A value (after `:`, or after `,` in an array).
    Value,
    /// A value or `]` (after `[`).
    ValueOrClose,
    /// A key or `}` (after `{`).
    KeyOrClose,
    /// A key (after `,` in an object).
    Key,
    /// `:` (after a key).
    Colon,
    /// `,` or the container's close (after a value).
    CommaOrClose,
}

/// The end (one past the closing bracket) of the object or array whose opening bracket is at `start`, its
/// whole text checked as `serde_json` checks a value it ignores.
fn container_end(b: &[u8], start: usize) -> Option<usize> {
    // Open containers, innermost last: `true` for an object.
    let mut open: Vec<bool> = Vec::new();
    let mut want = Want::Value;
    let mut i = start;
    loop {
        i = skip_ws(b, i);
        let c = *b.get(i)?;
        let close = match (want, c) {
            (Want::Value | Want::ValueOrClose, b'{') => {
                open.push(true);
                want = Want::KeyOrClose;
                i += 1;
                false
            }
            (Want::Value | Want::ValueOrClose, b'[') => {
                open.push(false);
                want = Want::ValueOrClose;
                i += 1;
                false
            }
            (Want::Value | Want::ValueOrClose, b'"') => {
                i = string_end(b, i)?;
                want = Want::CommaOrClose;
                false
            }
            (Want::ValueOrClose, b']') => true,
            (Want::Value | Want::ValueOrClose, _) => {
                // A number or literal; what follows it is checked as the next token.
                i = scalar_end(b, i)?;
                want = Want::CommaOrClose;
                false
            }
            (Want::KeyOrClose | Want::Key, b'"') => {
                i = string_end(b, i)?;
                want = Want::Colon;
                false
            }
            (Want::KeyOrClose, b'}') => true,
            (Want::Colon, b':') => {
                want = Want::Value;
                i += 1;
                false
            }
            (Want::CommaOrClose, b',') => {
                want = if *open.last()? { Want::Key } else { Want::Value };
                i += 1;
                false
            }
            (Want::CommaOrClose, b'}') if *open.last()? => true,
            (Want::CommaOrClose, b']') if !*open.last()? => true,
            _ => return None,
        };
        if close {
            i += 1;
            open.pop();
            if open.is_empty() {
                return Some(i);
            }
            want = Want::CommaOrClose;
        }
    }
}

/// Eight bytes at once (SWAR): a byte per lane.
const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each lane of `w` that is below `n` (`n` at most 0x80). Lanes above the lowest flagged one
/// may be flagged wrongly (a borrow runs up), so only the lowest is used.
fn below(w: u64, n: u8) -> u64 {
    w.wrapping_sub(ONES * u64::from(n)) & !w & HIGHS
}

/// The high bit of each lane of `w` equal to `c` (the lowest exact, as [`below`]).
fn equal(w: u64, c: u8) -> u64 {
    below(w ^ (ONES * u64::from(c)), 1)
}

/// The position after the whitespace at `i`: the indentation of pretty-printed JSON eight spaces at a time.
#[inline(always)]
fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while let Some(chunk) = b.get(i..i + 8) {
        let w = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        if w != ONES * u64::from(b' ') {
            break;
        }
        i += 8;
    }
    while b.get(i).is_some_and(|&c| is_ws(c)) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests;

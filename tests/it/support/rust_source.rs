//! Just enough of Rust's lexical grammar to find a test's body in a source file: comments, string literals
//! (escaped, raw `r#"…"#`, byte), char literals told from lifetimes, and the braces that remain. It lets
//! `code_table.rs` check that a test it names is a `#[test]` and that its body (comments removed) names the
//! code it is said to produce, rather than trusting that a function of that name exists.

/// A source file in two views of the same length: `code` with comments and the insides of string and char
/// literals blanked (for finding items and matching braces), `text` with only the comments blanked (for
/// reading what a body says).
pub struct Source {
    code: Vec<u8>,
    text: Vec<u8>,
}

/// One function of a source file: its attributes and doc lines, and its body, both with comments blanked.
pub struct Function {
    pub attributes: String,
    pub body: String,
}

fn ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

impl Source {
    pub fn new(src: &str) -> Source {
        let b = src.as_bytes();
        let mut code = b.to_vec();
        let mut text = b.to_vec();
        let blank = |v: &mut Vec<u8>, from: usize, to: usize| {
            for x in &mut v[from..to.min(b.len())] {
                if *x != b'\n' {
                    *x = b' ';
                }
            }
        };
        let mut i = 0;
        while i < b.len() {
            let prev_ident = i > 0 && ident_byte(b[i - 1]);
            let end = if b[i..].starts_with(b"//") {
                let end = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |p| i + p);
                blank(&mut code, i, end);
                blank(&mut text, i, end);
                end
            } else if b[i..].starts_with(b"/*") {
                let end = block_comment_end(b, i);
                blank(&mut code, i, end);
                blank(&mut text, i, end);
                end
            } else if let Some((open, hashes)) = (!prev_ident).then(|| raw_string_start(b, i)).flatten() {
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                let end = find(&b[open..], &close).map_or(b.len(), |p| open + p + close.len());
                blank(&mut code, open, end.saturating_sub(close.len()));
                end
            } else if b[i] == b'"' || (!prev_ident && b[i..].starts_with(b"b\"")) {
                let open = if b[i] == b'"' { i + 1 } else { i + 2 };
                let end = string_end(b, open);
                blank(&mut code, open, end.saturating_sub(1));
                end
            } else if b[i] == b'\'' {
                match char_literal_end(b, i) {
                    Some(end) => {
                        blank(&mut code, i + 1, end - 1);
                        end
                    }
                    None => i + 1, // a lifetime or a label
                }
            } else {
                i + 1
            };
            i = end.max(i + 1);
        }
        Source { code, text }
    }

    /// The function `name` (the first `fn name(` outside comments and literals), if the file has one.
    pub fn function(&self, name: &str) -> Option<Function> {
        let needle = format!("fn {name}");
        let mut from = 0;
        let start = loop {
            let p = from + find(&self.code[from..], needle.as_bytes())?;
            let after = self.code[p + needle.len()..]
                .iter()
                .find(|c| !c.is_ascii_whitespace());
            let before_ok = p == 0 || !ident_byte(self.code[p - 1]);
            if before_ok && matches!(after, Some(b'(' | b'<')) {
                break p;
            }
            from = p + needle.len();
        };
        let open = start + self.code[start..].iter().position(|&c| c == b'{')?;
        let mut depth = 0usize;
        let mut close = None;
        for (k, &c) in self.code[open..].iter().enumerate() {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(open + k);
                        break;
                    }
                }
                _ => {}
            }
        }
        let body = String::from_utf8_lossy(&self.text[open..=close?]).into_owned();
        Some(Function {
            attributes: self.attributes_before(start),
            body,
        })
    }

    /// The attribute lines directly above the item starting at `start` (doc lines and blank lines between
    /// them included), from the comment-free view.
    fn attributes_before(&self, start: usize) -> String {
        let head = String::from_utf8_lossy(&self.code[..start]).into_owned();
        let mut lines: Vec<&str> = head.lines().collect();
        // The item's own line up to `fn` (`pub`, `async`, …) is not an attribute.
        if !head.ends_with('\n') {
            lines.pop();
        }
        let mut out: Vec<&str> = lines
            .iter()
            .rev()
            .take_while(|l| {
                let t = l.trim();
                t.is_empty() || t.starts_with("#[") || t.ends_with(")]") || t.ends_with(']')
            })
            .copied()
            .collect();
        out.reverse();
        out.join("\n")
    }

    /// The names of the functions this file defines.
    pub fn function_names(&self) -> Vec<String> {
        let code = String::from_utf8_lossy(&self.code);
        let mut out = Vec::new();
        let mut rest: &str = &code;
        while let Some(p) = rest.find("fn ") {
            let before_ok = p == 0 || !ident_byte(rest.as_bytes()[p - 1]);
            rest = &rest[p + 3..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if before_ok && !name.is_empty() {
                out.push(name);
            }
        }
        out
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The end (one past `*/`) of the block comment at `i`, which may nest.
fn block_comment_end(b: &[u8], mut i: usize) -> usize {
    let mut depth = 0usize;
    while i < b.len() {
        if b[i..].starts_with(b"/*") {
            depth += 1;
            i += 2;
        } else if b[i..].starts_with(b"*/") {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    b.len()
}

/// At `r"`, `r#"`, `br#"`…: the position after the opening quote and the number of `#`.
fn raw_string_start(b: &[u8], i: usize) -> Option<(usize, usize)> {
    let mut j = i;
    if b.get(j) == Some(&b'b') {
        j += 1;
    }
    if b.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let hashes = b[j..].iter().take_while(|&&c| c == b'#').count();
    j += hashes;
    (b.get(j) == Some(&b'"')).then_some((j + 1, hashes))
}

/// The end (one past the closing quote) of the escaped string whose contents start at `open`.
fn string_end(b: &[u8], open: usize) -> usize {
    let mut j = open;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'"' => return j + 1,
            _ => j += 1,
        }
    }
    b.len()
}

/// At a `'`: the end (one past the closing quote) of a char literal, or `None` for a lifetime or label.
fn char_literal_end(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i + 1) == Some(&b'\\') {
        let close = b[i + 2..].iter().take(12).position(|&c| c == b'\'')?;
        return Some(i + 2 + close + 1);
    }
    // One character (of one to four UTF-8 bytes), then the closing quote.
    let len = match *b.get(i + 1)? {
        c if c < 0x80 => 1,
        c if c >= 0xf0 => 4,
        c if c >= 0xe0 => 3,
        _ => 2,
    };
    (b.get(i + 1 + len) == Some(&b'\'')).then_some(i + 2 + len)
}

/// Whether `text` holds `word` with neither neighbour an identifier byte or `-` (so a slug is not found
/// inside a longer one, nor `CD20` inside `CD205`).
pub fn mentions(text: &str, word: &str) -> bool {
    let edge = |c: Option<u8>| c.is_none_or(|c| !(ident_byte(c) || c == b'-'));
    text.match_indices(word).any(|(p, _)| {
        edge(p.checked_sub(1).map(|q| text.as_bytes()[q]))
            && edge(text.as_bytes().get(p + word.len()).copied())
    })
}

#[test]
fn bodies_are_found_past_braces_in_strings_comments_and_char_literals() {
    let src = Source::new(
        "/// doc\n#[test]\nfn a() {\n    let s = \"}\"; // }\n    let r = r#\"{\"#; let c = '}'; let l: &'static str = \
         \"x\";\n    /* } /* } */ */ assert!(found(\"no-gpu\"));\n}\nfn found(_: &str) -> bool { true }\n",
    );
    let f = src.function("a").expect("a is there");
    assert!(f.attributes.contains("#[test]"), "{}", f.attributes);
    assert!(
        f.body.ends_with("}") && f.body.contains("assert!(found(\"no-gpu\"))"),
        "{}",
        f.body
    );
    assert!(!f.body.contains("/*"), "comments are blanked: {}", f.body);
    assert_eq!(src.function_names(), ["a", "found"]);
    assert!(mentions(&f.body, "no-gpu"));
    assert!(!mentions("\"container-no-gpu-access\"", "no-gpu"));
    assert!(!mentions("CD2055", "CD205"));
    assert!(src.function("b").is_none());
}

//! [`Skim::value`] against `serde_json`'s `IgnoredAny` (what it replaces): every short text over the bytes
//! that matter to JSON, and every one-byte change to a longer document.

use super::*;

/// Does the skim take `text` as one value and nothing after it?
fn skims(text: &str) -> bool {
    let mut s = Skim::new(text);
    s.value().is_some() && s.at_end()
}

fn serde_takes(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

#[test]
fn every_short_text_is_taken_as_serde_json_takes_it() {
    let alphabet: &[u8] = b"[]{}\",:\\ 0-1.etnu";
    let mut texts: Vec<Vec<u8>> = vec![Vec::new()];
    let mut compared = 0usize;
    for _ in 0..4 {
        let mut longer = Vec::new();
        for t in &texts {
            for &c in alphabet {
                let mut t = t.clone();
                t.push(c);
                let text = std::str::from_utf8(&t).unwrap();
                assert_eq!(skims(text), serde_takes(text), "{text:?}");
                compared += 1;
                longer.push(t);
            }
        }
        texts = longer;
    }
    assert!(compared > 80_000, "{compared}");
}

#[test]
fn strings_numbers_and_literals_are_checked_as_serde_json_checks_them() {
    for text in [
        r#""\u00e9\n\t\"\\\/\b\f\r""#,
        r#""\u00g9""#,
        r#""\u00e""#,
        r#""\x""#,
        "\"a\u{1}b\"",
        "\"tab\there\"",
        "\"\u{7f}\u{e9}\u{1F600}\"",
        "[-0, 0.5, 1e5, 1E+5, 1e-5, -12.25e3, 10]",
        "[01]",
        "[1.]",
        "[.5]",
        "[1e]",
        "[-]",
        "[1e+]",
        "[+1]",
        "[true, false, null]",
        "[tru]",
        "[nul, 1]",
        "[truex]",
        "[1 2]",
        "[1,]",
        "[,1]",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "{1: 2}",
        "{\"a\":}",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
        "[\u{c}]",
        "[\u{a0}]",
        "{\"k\": [1, {\"x\": \"]\"}, \"}\"]}",
        "[\"a\\\\\", \"b\"]",
    ] {
        assert_eq!(skims(text), serde_takes(text), "{text:?}");
    }
}

/// A document with long strings and indentation (the eight-byte steps), changed one byte at a time.
#[test]
fn every_one_byte_change_of_a_document_is_taken_as_serde_json_takes_it() {
    let doc = serde_json::to_string_pretty(&serde_json::json!({
        "libraries": [
            {"path": "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13.0.96", "size": 724128,
             "note": "escapes \" \\ \n \u{1} and é in a long string, past eight bytes", "ok": true},
            {"path": null, "list": [[], {}, [1.5e-3, -2, 0]], "deep": {"a": {"b": {"c": [false]}}}}
        ]
    }))
    .unwrap();
    let bytes: &[u8] = b"\"\\{}[]:, \n0-.e1\x01";
    let mut compared = 0usize;
    for at in 0..doc.len() {
        for &c in bytes {
            let mut t = doc.clone().into_bytes();
            t[at] = c;
            if let Ok(text) = String::from_utf8(t) {
                assert_eq!(skims(&text), serde_takes(&text), "{text}");
                compared += 1;
            }
        }
    }
    assert!(compared > 5_000, "{compared}");
}

#[test]
fn an_array_is_stepped_over_by_its_brackets() {
    let text = r#"  ["a]", "\"]", "\\", [1, [2, "[["]], {"k": "]"}] , "after""#;
    let mut s = Skim::new(text);
    let array = s.array_by_brackets().unwrap();
    assert_eq!(array, &text[2..text.find(" ,").unwrap()]);
    assert_eq!(s.peek(), Some(b','));
    // Cut short, or not an array: none.
    assert!(Skim::new(&text[..20]).array_by_brackets().is_none());
    assert!(Skim::new("{\"a\": 1}").array_by_brackets().is_none());
    assert!(Skim::new("[\"unclosed]").array_by_brackets().is_none());
}

/// Arrays longer than a block, with brackets, quotes and backslashes in strings at every offset of a block
/// (the byte-by-byte walk and the block counts meet at each): the end found by brackets is the exact one.
#[test]
fn a_long_array_ends_where_the_exact_walk_ends() {
    let items = [
        r#""a [ string ] with \" and \\ in it""#,
        r#"{"path": "/usr/lib/libcuda.so.1", "list": [1, [2, "]"]], "esc": "\\\"]\\"}"#,
        r#""\\""#,
        r#""plain path /usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13""#,
    ];
    let mut compared = 0;
    for pad in 0..70 {
        for count in [1, 3, 9] {
            let mut text = format!("[{}", " ".repeat(pad));
            for k in 0..count {
                if k > 0 {
                    text.push_str(",\n  ");
                }
                text.push_str(items[(k + pad) % items.len()]);
            }
            text.push_str("] , \"after\"");
            let exact = Skim::new(&text).value().unwrap();
            let mut s = Skim::new(&text);
            assert_eq!(s.array_by_brackets(), Some(exact), "{text}");
            assert_eq!(s.peek(), Some(b','));
            compared += 1;
        }
    }
    assert_eq!(compared, 210);
}

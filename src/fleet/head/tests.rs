//! [`decode`] against `serde_json` on a report and on every one-byte change to it.

use super::*;
use serde_json::json;

/// A report shaped as `doctor --format json` writes it (the fields `fleet` reads, and some it does not),
/// with its library catalogue, as compact (`pretty` false) or indented text.
fn report(pretty: bool) -> String {
    let v = json!({
        "schema_version": 1,
        "tool": {"name": "cudadiag", "version": "0.1.0", "commit": null},
        "binaries": [],
        "host": {
            "collected": true,
            "driver": {"version": "580.95.05", "cuda": "13.0"},
            "gpus": [{"name": "NVIDIA H200", "cc": "9.0"}, {"name": "NVIDIA H\u{e9}200 \"b\"", "cc": "9.0"}],
            "facts": {
                "kernel": {"release": "6.8.0", "modules": [["nvidia", 1.5e3], ["uvm", -0.25]]},
                "libraries": [
                    {"soname": "libcudart.so.13", "path": "/usr/local/cuda/lib64/libcudart.so.13",
                     "version": "13.0.96", "owner": {"kind": "toolkit", "name": "/usr/local/cuda"},
                     "note": "a [bracket] and a \"quote\" and a \\ in a string", "size": 724128, "stub": false},
                    {"soname": "libcublas.so.13", "path": null, "tags": [[], {}, [1, [2]]]}
                ],
                "hostname": {"name": "gpu-a1", "source": "/etc/hostname"}
            }
        },
        "findings": [
            {"code": "CD300", "slug": "driver-library-mismatch", "severity": "error", "evidence": [{"path": "/x"}]},
            {"code": "CD200", "slug": "library-not-found", "severity": "warning"}
        ],
        "summary": {"errors": 1, "warnings": 1, "ratio": 0.5, "none": null, "ok": true}
    });
    if pretty {
        serde_json::to_string_pretty(&v).unwrap()
    } else {
        serde_json::to_string(&v).unwrap()
    }
}

/// Where the library catalogue's text is (the one part the skim does not check byte for byte).
fn catalogue(text: &str) -> std::ops::Range<usize> {
    let start = text.find("\"libraries\"").unwrap();
    let open = start + text[start..].find('[').unwrap();
    let array = Skim::new(&text[open..]).array_by_brackets().unwrap();
    start..open + array.len()
}

#[test]
fn a_report_is_skimmed_to_the_head_serde_gives() {
    for pretty in [false, true] {
        let text = report(pretty);
        let skim = skimmed(&text).expect("a plain report is skimmed, not left to serde_json");
        let whole: Head<'_> = serde_json::from_str(&text).unwrap();
        assert_eq!(skim, whole);
        assert_eq!(skim.host.as_ref().unwrap().gpus.len(), 2);
        assert_eq!(skim.findings.as_ref().unwrap().len(), 2);
    }
}

/// Every one-byte change outside the library catalogue (each byte replaced by each of a set of bytes that
/// matter to JSON, or removed): where the skim gives a head, it is the one `serde_json` gives; where
/// `serde_json` refuses the text, the skim gives none (and [`decode`] returns `serde_json`'s error).
#[test]
fn skim_agrees_with_serde_json_on_every_one_byte_change() {
    let text = report(false);
    let skip = catalogue(&text);
    let bytes: &[u8] = b"\"\\{}[]:, \n0-.eE+tfnu1a\x01\x7f";
    let (mut compared, mut skimmed_count) = (0usize, 0usize);
    for at in (0..text.len()).filter(|i| !skip.contains(i)) {
        let mut changes: Vec<Vec<u8>> = bytes
            .iter()
            .map(|&c| {
                let mut t = text.clone().into_bytes();
                t[at] = c;
                t
            })
            .collect();
        let mut removed = text.clone().into_bytes();
        removed.remove(at);
        changes.push(removed);
        for changed in changes {
            let Ok(changed) = String::from_utf8(changed) else {
                continue;
            };
            compared += 1;
            let whole = serde_json::from_str::<Head<'_>>(&changed);
            if let Some(skim) = skimmed(&changed) {
                skimmed_count += 1;
                assert_eq!(Ok(&skim), whole.as_ref().map_err(|e| e.to_string()), "{changed}");
            }
            match (decode(&changed), whole) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{changed}"),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{changed}"),
                (a, b) => panic!("{changed}: decode {a:?}, serde_json {b:?}"),
            }
        }
    }
    // Floors: the changes were made, and many of them were skimmed (not all left to serde_json).
    assert!(compared > 10_000, "{compared}");
    assert!(skimmed_count > 1_000, "{skimmed_count}");
}

/// The chosen difference: damage inside the catalogue that leaves its brackets and strings whole is not
/// noticed; a catalogue cut short (a report truncated by a node that died while writing it) still is.
#[test]
fn the_catalogue_is_stepped_over_by_its_brackets() {
    let text = report(true);
    let damaged = text.replacen("\"size\": 724128", "\"size\": 72 4128", 1);
    assert_ne!(damaged, text);
    assert!(serde_json::from_str::<Head<'_>>(&damaged).is_err());
    assert_eq!(decode(&damaged).unwrap(), decode(&text).unwrap());

    let cut = &text[..catalogue(&text).start + 200];
    let err = decode(cut).unwrap_err();
    assert_eq!(
        err.to_string(),
        serde_json::from_str::<Head<'_>>(cut).unwrap_err().to_string()
    );
    assert!(err.is_eof(), "{err}");
}

#[test]
fn repeated_escaped_and_unusual_members_are_left_to_serde_json() {
    for text in [
        r#"{"schema_version": 1, "host": {}, "host": {}}"#,
        r#"{"schema_version": 1, "h\u006fst": {"driver": {"version": "1"}}}"#,
        r#"{"schema_version": 1, "host": [null, null, [], null]}"#,
        r#"{"schema_version": 1, "host": {"facts": {"hostname": "a", "hostname": "b"}}}"#,
        r#"{"snapshot_version": 1e999}"#,
        r#"[1, null, {"driver": null}]"#,
    ] {
        assert!(skimmed(text).is_none(), "{text}");
        assert_eq!(
            decode(text).map_err(|e| e.to_string()),
            serde_json::from_str::<Head<'_>>(text).map_err(|e| e.to_string()),
            "{text}"
        );
    }
    // Nulls where objects may be are read as serde_json reads them.
    let text = r#"{"schema_version": null, "host": {"facts": null, "driver": null, "hostname": null}}"#;
    assert_eq!(skimmed(text).unwrap(), serde_json::from_str(text).unwrap());
}

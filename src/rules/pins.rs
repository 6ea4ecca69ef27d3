//! Does an installed version satisfy a `Requires-Dist` specifier (PEP 440 "Version specifiers")? For the rules
//! that compare the distributions of one Python environment (`jax_versions`, `extension_abi`).
//!
//! Releases only: a version's local label (`+cu121`) is dropped, as a specifier without one ignores it; a pre-,
//! post- or dev-release suffix ends the release (`0.4.35rc1` is compared as `0.4.35`). A clause that cannot be
//! read (an epoch, an operator PEP 440 does not define) leaves the answer unknown: no rule judges it.

use crate::facts::loader::release;
use std::cmp::Ordering;

/// Does `version` satisfy every clause of `specifier` (`>=0.4.34,<=0.4.35`, `==2.5.1`, `==0.4.*`)? `None`
/// when either cannot be read; `Some(true)` for an empty specifier.
pub fn admits(specifier: &str, version: &str) -> Option<bool> {
    let public = version.split('+').next().unwrap_or(version);
    let have = release(public)?;
    for clause in specifier.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        if !clause_admits(clause, public, &have)? {
            return Some(false);
        }
    }
    Some(true)
}

fn clause_admits(clause: &str, public: &str, have: &[u64]) -> Option<bool> {
    if let Some(v) = clause.strip_prefix("===") {
        return Some(v.trim() == public);
    }
    let (op, v) = ["==", "!=", "<=", ">=", "~=", "<", ">"]
        .iter()
        .find_map(|op| clause.strip_prefix(op).map(|v| (*op, v.trim())))?;
    if let Some(prefix) = v.strip_suffix(".*") {
        let want = release(prefix)?;
        let matches = have.len() >= want.len() && have[..want.len()] == want[..]
            || (have.len() < want.len() && padded_cmp(have, &want) == Ordering::Equal);
        return match op {
            "==" => Some(matches),
            "!=" => Some(!matches),
            _ => None,
        };
    }
    let want = release(v.split('+').next().unwrap_or(v))?;
    let order = padded_cmp(have, &want);
    Some(match op {
        "==" => order == Ordering::Equal,
        "!=" => order != Ordering::Equal,
        "<=" => order != Ordering::Greater,
        ">=" => order != Ordering::Less,
        "<" => order == Ordering::Less,
        ">" => order == Ordering::Greater,
        // `~=X.Y.Z`: `>=X.Y.Z` and `==X.Y.*`.
        _ => {
            if want.len() < 2 {
                return None;
            }
            let stem = &want[..want.len() - 1];
            order != Ordering::Less
                && padded_cmp(&have[..stem.len().min(have.len())], stem) == Ordering::Equal
        }
    })
}

/// Compares two releases, the shorter padded with zeros (`2.5` = `2.5.0`).
fn padded_cmp(a: &[u64], b: &[u64]) -> Ordering {
    let n = a.len().max(b.len());
    (0..n)
        .map(|i| a.get(i).unwrap_or(&0).cmp(b.get(i).unwrap_or(&0)))
        .find(|o| *o != Ordering::Equal)
        .unwrap_or(Ordering::Equal)
}

#[cfg(test)]
mod tests {
    use super::admits;

    #[test]
    fn specifiers_as_pep_440_reads_them() {
        for (spec, version, want) in [
            ("<=0.4.35,>=0.4.34", "0.4.35", Some(true)),
            ("<=0.4.35,>=0.4.34", "0.4.30", Some(false)),
            ("<=0.4.35,>=0.4.34", "0.4.36", Some(false)),
            ("==0.4.35", "0.4.35", Some(true)),
            ("==0.4.35", "0.4.36", Some(false)),
            ("==2.5.1", "2.5.1+cu121", Some(true)),
            ("==2.5", "2.5.0", Some(true)),
            ("==2.5.*", "2.5.1", Some(true)),
            ("==2.5.*", "2.6.0", Some(false)),
            ("!=2.5.0", "2.5.0", Some(false)),
            ("~=0.4.30", "0.4.35", Some(true)),
            ("~=0.4.30", "0.5.0", Some(false)),
            ("<0.5", "0.4.35", Some(true)),
            (">0.5", "0.4.35", Some(false)),
            ("===0.4.35", "0.4.35", Some(true)),
            ("", "1.0", Some(true)),
            ("==1!2.0", "2.0", None),
            ("^1.0", "1.0", None),
            ("==1.0", "not-a-version", None),
        ] {
            assert_eq!(admits(spec, version), want, "{version} against {spec}");
        }
    }
}

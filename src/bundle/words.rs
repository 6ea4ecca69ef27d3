//! Where a name stands in a string, for `--redact`: as a whole word, as a path's leading directory, or as the
//! domain after a replaced user's `@`.
//!
//! A word is a run of letters, digits (any script) and `_`: a name is replaced only where the characters on
//! both sides are not word characters, so `uvm` is not found inside `nvidia_uvm` and `al` not inside `alice`
//! or `jürgen`. `-`, `.`, `/`, `@` and `:` separate words (`/scratch/alice-env`, `alice@corp`, `gpu7.corp`).

use std::collections::BTreeMap;

/// The first match of `from` in `s` at or after byte `start`, on character boundaries; with `fold`, ASCII case
/// is ignored (host names).
fn find_at(s: &str, from: &str, start: usize, fold: bool) -> Option<usize> {
    if !fold {
        return s.get(start..)?.find(from).map(|o| start + o);
    }
    let (hay, needle) = (s.as_bytes(), from.as_bytes());
    let last = hay.len().checked_sub(needle.len())?;
    (start..=last).find(|&i| {
        s.is_char_boundary(i)
            && s.is_char_boundary(i + needle.len())
            && hay[i..i + needle.len()].eq_ignore_ascii_case(needle)
    })
}

/// Replaces `from` by `to` where the character before passes `before_ok` and the one after `after_ok` (the
/// start and end of `s` always do). Returns the new string and how many were replaced.
pub fn replace_bounded(
    s: &str,
    from: &str,
    to: &str,
    fold: bool,
    before_ok: impl Fn(char) -> bool,
    after_ok: impl Fn(char) -> bool,
) -> (String, usize) {
    if from.is_empty() || find_at(s, from, 0, fold).is_none() {
        return (s.to_string(), 0);
    }
    let mut out = String::with_capacity(s.len());
    let mut n = 0;
    let mut i = 0;
    while let Some(at) = find_at(s, from, i, fold) {
        let end = at + from.len();
        let before = s[..at].chars().next_back().is_none_or(&before_ok);
        let after = s[end..].chars().next().is_none_or(&after_ok);
        if before && after {
            out.push_str(&s[i..at]);
            out.push_str(to);
            n += 1;
            i = end;
        } else {
            let step = at + s[at..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&s[i..step]);
            i = step;
        }
    }
    out.push_str(&s[i..]);
    (out, n)
}

/// A character that continues a word.
pub fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Replaces `from` where it stands as a whole word (`alice` in `/scratch/alice/x`, `alice-env` and `alice@x`,
/// not in `malice`, `alice_2` or `jürgen`).
pub fn replace_word(s: &str, from: &str, to: &str, fold: bool) -> (String, usize) {
    replace_bounded(s, from, to, fold, |c| !is_word_char(c), |c| !is_word_char(c))
}

/// Replaces the directory `from` where it starts a path (not inside a longer one) and ends at a component
/// boundary: `/home/al` in `/home/al/x` and `a:/home/al`, not in `/mnt/home/al` or `/home/alan`.
pub fn replace_path(s: &str, from: &str, to: &str) -> (String, usize) {
    let name = |c: char| c.is_alphanumeric() || matches!(c, '-' | '_' | '.');
    replace_bounded(
        s,
        from,
        to,
        false,
        |c| !name(c) && c != '/',
        |c| !name(c) || c == '/',
    )
}

/// Replaces the domain after each `user-N@` (a user name already replaced) by `domain-K`, the same domain
/// (ignoring case) always by the same `K`: `alice@corp.example.com` became `user-1@corp.example.com`, which
/// still says where the person works.
pub fn replace_domains(s: &str, domains: &mut BTreeMap<String, String>) -> (String, usize) {
    if !s.contains('@') {
        return (s.to_string(), 0);
    }
    let mut out = String::with_capacity(s.len());
    let mut n = 0;
    let mut rest = s;
    while let Some(at) = rest.find('@') {
        let (head, tail) = (&rest[..at], &rest[at + 1..]);
        out.push_str(head);
        out.push('@');
        let local = head
            .rsplit(|c: char| !(is_word_char(c) || c == '-'))
            .next()
            .unwrap_or_default();
        let is_user = local
            .strip_prefix("user-")
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
        let len = tail
            .find(|c: char| !(c.is_alphanumeric() || matches!(c, '.' | '-' | '_')))
            .unwrap_or(tail.len());
        let domain = tail[..len].trim_end_matches('.');
        if is_user && !domain.is_empty() {
            let next = domains.len() + 1;
            let tag = domains
                .entry(domain.to_ascii_lowercase())
                .or_insert_with(|| format!("domain-{next}"));
            out.push_str(tag);
            n += 1;
            rest = &tail[domain.len()..];
        } else {
            rest = tail;
        }
    }
    out.push_str(rest);
    (out, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_stop_at_underscores_and_letters_of_any_script() {
        assert_eq!(
            replace_word("nvidia_uvm nvidia-uvm uvm", "uvm", "host-1", true).1,
            2
        );
        assert_eq!(
            replace_word("/home/jürgen/x jürgenx", "jürgen", "user-1", false).0,
            "/home/user-1/x jürgenx"
        );
        assert_eq!(
            replace_word("GPU7.Corp gpu7.corp", "gpu7.corp", "host-1", true).0,
            "host-1 host-1"
        );
        assert_eq!(
            replace_word("/scratch/alice/x alice-env malice", "alice", "user-1", false).1,
            2
        );
        // A fold never cuts a character: `İ` lower-cases to two characters, and ASCII folding leaves it be.
        assert_eq!(replace_word("İx ix", "ix", "h", true).0, "İx h");
    }

    #[test]
    fn paths_match_whole_leading_directories() {
        assert_eq!(
            replace_path("/home/al/x:/home/alan:/mnt/home/al", "/home/al", "/home/user-1").1,
            1
        );
        assert_eq!(
            replace_path("/home/al", "/home/al", "/home/user-1").0,
            "/home/user-1"
        );
    }

    #[test]
    fn the_domain_of_a_replaced_user_goes_too() {
        let mut d = BTreeMap::new();
        let (s, n) = replace_domains(
            "user-1@Corp.Example.com, user-2@corp.example.com. x@y.org @",
            &mut d,
        );
        assert_eq!(s, "user-1@domain-1, user-2@domain-1. x@y.org @");
        assert_eq!(n, 2);
    }
}

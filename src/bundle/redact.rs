//! `snapshot --redact`: a support bundle that names no person and no machine.
//!
//! What is replaced, and by what (the list and its reasons are in `docs/support-bundles.md`):
//!
//! - **Host names**: the node's name (and its short form, before the first dot) becomes `host-1`.
//! - **Home directories**: `HOME`, the home of the user the program runs as (`/etc/passwd`), and every
//!   `/home/NAME` seen in the facts become `/home/user-N`.
//! - **User names**: `USER`, `LOGNAME`, `SUDO_USER`, the owner names of those homes and the passwd name of the
//!   program's uid become `user-N`, wherever they stand as a word (`/scratch/alice/env` → `/scratch/user-1/env`).
//! - **Environment values**: a variable off the allow-list ([`ALLOWED`]) keeps its name, its value becomes
//!   `redacted-N`. Allowed values are kept, with the names above replaced inside them.
//! - **Variable names** holding a host or user name (`ALICE_TOKEN`) get the placeholder (`USER_1_TOKEN`); the
//!   domain after a replaced user's `@` becomes `domain-N`.
//!
//! Names are matched as whole words (letters and digits of any script, and `_`; host names in any case), and
//! only in strings of data: [`Redactor::facts`] redacts the typed facts as they are serialised
//! ([`scrub`](super::scrub)), so a field name or an enum value that happens to equal a name is never touched
//! and the bundle always reads back. A field added to the facts later is redacted without anyone remembering
//! to. The same name always gets the same placeholder, in every field: a rule that compares two paths (is the `libcuda.so.1` it picks in a
//! directory of `LD_LIBRARY_PATH`?) compares them the same way after, which is why `doctor --facts` and
//! `inspect --facts` give the same findings on a redacted snapshot as on the machine. The `redactions` section
//! says what kinds were replaced and how often, never the originals.

use super::words;
use crate::facts::Facts;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::BTreeMap;

/// The variables whose values are kept: what the rules and the loader read, or what explains a finding, and
/// none of them a secret by design. Every `NVIDIA_*` not listed (a registry key, a licence token) is redacted.
pub const ALLOWED: &[&str] = &[
    // Which GPUs CUDA shows, and in what order (`no-visible-devices`, `device-order-mismatch`).
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    // How the driver loads and JIT-compiles modules (`jit-*` findings, lazy loading).
    "CUDA_MODULE_LOADING",
    "CUDA_FORCE_PTX_JIT",
    "CUDA_DISABLE_PTX_JIT",
    "CUDA_DISABLE_JIT",
    "CUDA_CACHE_DISABLE",
    "CUDA_CACHE_MAXSIZE",
    // Paths: the loader's search, the toolkit, the cache, the Python environments (names replaced inside).
    "CUDA_CACHE_PATH",
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "CUDA_HOME",
    "CUDA_PATH",
    "CONDA_PREFIX",
    "VIRTUAL_ENV",
    "PATH",
    "HOME",
    // What the NVIDIA Container Toolkit reads (GPU selection, injected libraries, the image's CUDA floor).
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "NVIDIA_REQUIRE_CUDA",
    "NVIDIA_DISABLE_REQUIRE",
    "NVIDIA_MIG_CONFIG_DEVICES",
    "NVIDIA_MIG_MONITOR_DEVICES",
    // The CUDA version a CUDA base image declares.
    "NVIDIA_CUDA_VERSION",
];

/// Words that are never taken as a user name to replace, even when a home or a variable names them: they
/// are parts of the paths the rules read (`/usr/local/cuda`, `/proc/driver/nvidia`), or system accounts that
/// name nobody.
const NOT_PRIVATE: &[&str] = &[
    "root", "nobody", "admin", "user", "users", "home", "nvidia", "cuda", "lib", "lib64", "lib32", "usr",
    "bin", "sbin", "local", "share", "opt", "etc", "dev", "proc", "sys", "tmp", "var", "run", "data", "site",
    "packages", "python", "conda", "envs", "nix", "store", "driver", "gpu", "gpus", "compat", "stubs",
    "include", "targets", "default", "linux", "x86_64", "aarch64", "sbsa",
];

/// What `--redact` replaced: per kind, how many distinct originals and how many occurrences. Never the
/// originals.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Redactions {
    /// `host-names`, `home-directories`, `user-names`, `environment-values`.
    pub kinds: BTreeMap<String, Replaced>,
    /// The variables whose values were replaced (their names are kept: they are what the reader needs to ask
    /// the customer about).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variables: Vec<String>,
}

/// How much of one kind was replaced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replaced {
    /// Distinct originals (each got its own placeholder).
    pub distinct: usize,
    /// Occurrences replaced, over every string of the snapshot.
    pub occurrences: usize,
}

/// The names to hide, gathered before anything is replaced.
#[derive(Debug, Clone, Default)]
pub struct Names {
    /// Host names (a fully qualified one and its short form are the same host).
    pub hosts: Vec<String>,
    /// Home directories (absolute, without a trailing slash).
    pub homes: Vec<String>,
    /// User names.
    pub users: Vec<String>,
}

impl Names {
    /// Adds a host name and its short form.
    pub fn host(&mut self, name: &str) {
        let name = name.trim_end_matches('.');
        let system = NOT_PRIVATE.contains(&name.to_ascii_lowercase().as_str());
        if name.len() >= 2 && !system && !self.hosts.iter().any(|h| h.eq_ignore_ascii_case(name)) {
            self.hosts.push(name.to_string());
        }
    }

    /// Adds a home directory, and its last component as a user name. A home whose last component names nobody
    /// (`/`, `/root`, `/home`, `/var/lib/nvidia`) is not one to hide: replacing `/home` would rename every
    /// home under it.
    pub fn home(&mut self, path: &str) {
        let path = path.trim_end_matches('/');
        let owner = path.rsplit('/').next().unwrap_or_default();
        if !path.starts_with('/') || path.contains(':') || !private_name(owner) {
            return;
        }
        self.user(owner);
        if !self.homes.iter().any(|h| h == path) {
            self.homes.push(path.to_string());
        }
    }

    /// Adds a user name, unless it is a system word ([`NOT_PRIVATE`]) or too short to replace safely.
    pub fn user(&mut self, name: &str) {
        if private_name(name) && !self.users.iter().any(|u| u == name) {
            self.users.push(name.to_string());
        }
    }

    /// Adds every `/home/NAME` found in any string of `value` (other users' homes the catalogue walked, a
    /// colleague's directory on `LD_LIBRARY_PATH`).
    pub fn homes_in(&mut self, value: &Value) {
        walk_strings(value, &mut |s| {
            let mut rest = s;
            while let Some(i) = rest.find("/home/") {
                let after = &rest[i + 6..];
                let end = after.find(|c: char| !is_name_char(c)).unwrap_or(after.len());
                let starts_path = i == 0 || !is_name_char(rest[..i].chars().last().unwrap_or(' '));
                if end > 0 && starts_path {
                    self.home(&format!("/home/{}", &after[..end]));
                }
                rest = after;
            }
        });
    }
}

/// Whether `name` may be a person's: two characters or more, a letter among them (any script: `jürgen`,
/// `李雷`), the characters of a user name, and not a system word.
fn private_name(name: &str) -> bool {
    name.chars().nth(1).is_some()
        && name.chars().any(char::is_alphabetic)
        && name.chars().all(is_name_char)
        && !NOT_PRIVATE.contains(&name.to_lowercase().as_str())
}

/// A character of a user or host name (POSIX allows `-`, `_`, `.`; useradd lets distributions allow more).
fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '-' | '_' | '.')
}

/// Calls `f` on every string (and object key) of `value`.
fn walk_strings(value: &Value, f: &mut dyn FnMut(&str)) {
    match value {
        Value::String(s) => f(s),
        Value::Array(a) => a.iter().for_each(|v| walk_strings(v, f)),
        Value::Object(o) => o.iter().for_each(|(k, v)| {
            f(k);
            walk_strings(v, f);
        }),
        _ => {}
    }
}

/// One replacement rule: an original, its placeholder, its kind, and whether it is a path prefix (a home) or a
/// word (a host or user name).
struct Rule {
    from: String,
    to: String,
    kind: &'static str,
    prefix: bool,
    /// Matched without regard to ASCII case: host names (DNS names are case-insensitive, RFC 4343), and every
    /// name inside an environment variable's name (`ALICE_TOKEN`).
    fold: bool,
}

/// Whether an environment value is a placeholder `--redact` wrote (`redacted-3`): what it stood for is unknown.
pub fn is_placeholder_value(value: &str) -> bool {
    value
        .strip_prefix("redacted-")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Replaces the gathered names in every string of data of a snapshot.
pub struct Redactor {
    rules: Vec<Rule>,
    values: BTreeMap<String, String>,
    domains: BTreeMap<String, String>,
    counts: BTreeMap<&'static str, Replaced>,
    variables: Vec<String>,
}

/// Kind names, as the `redactions` section spells them.
const HOSTS: &str = "host-names";
const HOMES: &str = "home-directories";
const USERS: &str = "user-names";
const VALUES: &str = "environment-values";
const VAR_NAMES: &str = "environment-names";
const DOMAINS: &str = "mail-domains";

impl Redactor {
    /// Numbers the names: user names first (a home's placeholder is built from its owner's), in the order they
    /// were found, so the same snapshot always reads the same.
    pub fn new(names: &Names) -> Redactor {
        let user_tag = |u: &str| {
            names
                .users
                .iter()
                .position(|x| x == u)
                .map(|i| format!("user-{}", i + 1))
        };
        let mut rules = Vec::new();
        let mut counts = BTreeMap::new();
        let mut extra_users = 0;
        for h in &names.homes {
            let owner = h.rsplit('/').next().unwrap_or_default();
            let tag = user_tag(owner).unwrap_or_else(|| {
                extra_users += 1;
                format!("user-{}", names.users.len() + extra_users)
            });
            rules.push(Rule {
                from: h.clone(),
                to: format!("/home/{tag}"),
                kind: HOMES,
                prefix: true,
                fold: false,
            });
        }
        // Longest first: `/home/al/x` before `/home/al`, `gpu1.example.org` before `gpu1`.
        rules.sort_by_key(|r| std::cmp::Reverse(r.from.len()));
        let mut words: Vec<Rule> = Vec::new();
        for (i, h) in names.hosts.iter().enumerate() {
            let short = h.split('.').next().unwrap_or(h);
            // A short form shares its host's placeholder; two FQDNs of one short name are one host.
            let n = names.hosts[..i]
                .iter()
                .position(|p| p.split('.').next() == Some(short))
                .unwrap_or(i);
            for from in [h.as_str(), short] {
                if from.len() >= 2 && !words.iter().any(|w| w.from.eq_ignore_ascii_case(from)) {
                    words.push(Rule {
                        from: from.to_string(),
                        to: format!("host-{}", n + 1),
                        kind: HOSTS,
                        prefix: false,
                        fold: true,
                    });
                }
            }
        }
        for u in &names.users {
            if let Some(tag) = user_tag(u) {
                words.push(Rule {
                    from: u.clone(),
                    to: tag,
                    kind: USERS,
                    prefix: false,
                    fold: false,
                });
            }
        }
        words.sort_by_key(|r| std::cmp::Reverse(r.from.len()));
        rules.extend(words);
        for r in &rules {
            counts.entry(r.kind).or_insert_with(Replaced::default).distinct += 1;
        }
        // Host names count hosts, not spellings.
        if let Some(c) = counts.get_mut(HOSTS) {
            c.distinct = rules
                .iter()
                .filter(|r| r.kind == HOSTS)
                .map(|r| r.to.as_str())
                .collect::<std::collections::BTreeSet<_>>()
                .len();
        }
        Redactor {
            rules,
            values: BTreeMap::new(),
            domains: BTreeMap::new(),
            counts,
            variables: Vec::new(),
        }
    }

    /// Redacts one string of data. A path the kernel names (`/dev/nvidia-uvm`, `/proc/driver/nvidia/…`,
    /// `/sys/…`) names no person and is what the device and driver rules compare by name: it is kept whole, or
    /// a host called `uvm` would turn `/dev/nvidia-uvm` into a missing node.
    pub fn text(&mut self, s: &str) -> String {
        if ["/dev/", "/proc/", "/sys/"].iter().any(|p| s.starts_with(p)) {
            return s.to_string();
        }
        let mut out = s.to_string();
        let mut users = false;
        for r in &self.rules {
            let (next, n) = if r.prefix {
                words::replace_path(&out, &r.from, &r.to)
            } else {
                words::replace_word(&out, &r.from, &r.to, r.fold)
            };
            if n > 0 {
                out = next;
                users |= r.kind != HOSTS;
                self.counts.entry(r.kind).or_default().occurrences += n;
            }
        }
        if users {
            let (next, n) = words::replace_domains(&out, &mut self.domains);
            if n > 0 {
                out = next;
                let c = self.counts.entry(DOMAINS).or_default();
                c.occurrences += n;
                c.distinct = self.domains.len();
            }
        }
        out
    }

    /// The snapshot's facts as a JSON tree with every string of data redacted: paths, names, values and the
    /// keys of maps, never a field name or an enum value ([`scrub`](super::scrub)), so the tree reads back
    /// into the same types whatever the names were. The environment's variables are judged apart: values by
    /// the allow-list ([`ALLOWED`]), names by [`Redactor::var_name`].
    pub fn facts(&mut self, mut facts: Facts) -> serde_json::Result<Value> {
        let vars = facts.host.as_mut().map(|h| std::mem::take(&mut h.env.vars));
        let mut value = super::scrub::to_value(&facts, &RefCell::new(&mut *self))?;
        if let (Some(vars), Some(slot)) = (vars, value.pointer_mut("/host/env/vars")) {
            let mut out = serde_json::Map::new();
            for (name, v) in vars {
                let v = self.env_value(&name, &v);
                let mut name = self.var_name(&name);
                while out.contains_key(&name) {
                    name.push('_');
                }
                out.insert(name, Value::String(v));
            }
            *slot = Value::Object(out);
        }
        Ok(value)
    }

    /// An environment value: kept (names replaced) when allowed, else a numbered placeholder.
    fn env_value(&mut self, name: &str, value: &str) -> String {
        if ALLOWED.contains(&name) {
            return self.text(value);
        }
        let next = self.values.len() + 1;
        let tag = self
            .values
            .entry(value.to_string())
            .or_insert_with(|| format!("redacted-{next}"))
            .clone();
        let c = self.counts.entry(VALUES).or_default();
        c.occurrences += 1;
        c.distinct = self.values.len();
        if !self.variables.iter().any(|v| v == name) {
            self.variables.push(name.to_string());
        }
        tag
    }

    /// An environment variable's name with the host and user names in it replaced by their placeholders in
    /// a variable's spelling (`ALICE_TOKEN` → `USER_1_TOKEN`, `jobs_gpu7` → `jobs_HOST_1`): the name stays a
    /// name (a reader that parses `NAME=value` still can), says which placeholder it held, and no rule reads
    /// such a variable. Names are matched ignoring ASCII case and between `_`s; the allow-listed names are
    /// ours, never a person's, and are kept.
    fn var_name(&mut self, name: &str) -> String {
        if ALLOWED.contains(&name) {
            return name.to_string();
        }
        let mut out = name.to_string();
        for r in self.rules.iter().filter(|r| !r.prefix) {
            let to = r.to.to_ascii_uppercase().replace('-', "_");
            let bound = |c: char| !c.is_alphanumeric();
            let (next, n) = words::replace_bounded(&out, &r.from, &to, true, bound, bound);
            if n > 0 {
                out = next;
                self.counts.entry(VAR_NAMES).or_default().occurrences += n;
            }
        }
        if out != name {
            self.counts.entry(VAR_NAMES).or_default().distinct += 1;
        }
        out
    }

    /// What was replaced: the kinds of which at least one occurrence was (a user name found only inside the
    /// home directories already replaced is not listed twice).
    pub fn report(&self) -> Redactions {
        Redactions {
            kinds: self
                .counts
                .iter()
                .filter(|(_, c)| c.occurrences > 0)
                .map(|(k, c)| ((*k).to_string(), *c))
                .collect(),
            variables: self.variables.clone(),
        }
    }
}

impl super::scrub::Rewrite for &mut Redactor {
    fn rewrite(&mut self, s: &str) -> String {
        self.text(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names() -> Names {
        let mut n = Names::default();
        n.host("gpu17.example.org");
        n.user("alice");
        n.home("/home/alice");
        n.home("/data/bob/");
        n
    }

    #[test]
    fn host_names_ignore_case_and_users_keep_it() {
        let mut r = Redactor::new(&names());
        assert_eq!(
            r.text("GPU17.Example.ORG Gpu17 Alice alice"),
            "host-1 host-1 Alice user-1"
        );
        assert_eq!(
            r.text("alice@Corp.example bob@corp.example"),
            "user-1@domain-1 user-2@domain-1"
        );
        let mut n = Names::default();
        n.user("jürgen");
        n.home("/home/jürgen");
        let mut r = Redactor::new(&n);
        assert_eq!(
            r.text("/home/jürgen/x:/scratch/jürgen"),
            "/home/user-1/x:/scratch/user-1"
        );
    }

    #[test]
    fn the_same_name_gets_the_same_placeholder_everywhere() {
        let mut r = Redactor::new(&names());
        assert_eq!(r.text("/home/alice/.local/lib"), "/home/user-1/.local/lib");
        assert_eq!(
            r.text("/data/bob/lib:/scratch/alice"),
            "/home/user-2/lib:/scratch/user-1"
        );
        assert_eq!(r.text("gpu17.example.org and gpu17"), "host-1 and host-1");
        let report = r.report();
        assert_eq!(
            report.kinds[HOSTS],
            Replaced {
                distinct: 1,
                occurrences: 2
            }
        );
        assert_eq!(report.kinds[HOMES].distinct, 2);
    }

    #[test]
    fn env_values_off_the_allow_list_become_placeholders() {
        let mut host = crate::facts::HostFacts::default();
        for (k, v) in [
            ("HOME", "/home/alice"),
            ("NVIDIA_API_KEY", "nvapi-secret"),
            ("NVIDIA_OTHER", "nvapi-secret"),
            ("CUDA_VISIBLE_DEVICES", "0,1"),
            ("ALICE_TOKEN", "t"),
            ("JOBS_GPU17", "j"),
        ] {
            host.env.vars.insert(k.into(), v.into());
        }
        host.env.nvcc = vec!["/home/alice/cuda/bin/nvcc".into()];
        let facts = Facts {
            host: Some(host),
            ..Facts::default()
        };
        let mut r = Redactor::new(&names());
        let facts = r.facts(facts).unwrap();
        let vars = &facts["host"]["env"]["vars"];
        assert_eq!(vars["HOME"], "/home/user-1");
        // Placeholders are numbered in the variables' order.
        assert_eq!(vars["USER_1_TOKEN"], "redacted-1");
        assert_eq!(vars["JOBS_HOST_1"], "redacted-2");
        assert_eq!(vars["NVIDIA_API_KEY"], "redacted-3");
        assert_eq!(vars["NVIDIA_OTHER"], "redacted-3");
        assert_eq!(vars["CUDA_VISIBLE_DEVICES"], "0,1");
        assert_eq!(facts["host"]["env"]["nvcc"][0], "/home/user-1/cuda/bin/nvcc");
        let report = r.report();
        assert_eq!(
            report.kinds[VALUES],
            Replaced {
                distinct: 3,
                occurrences: 4
            }
        );
        assert_eq!(report.kinds[VAR_NAMES].distinct, 2);
        assert_eq!(
            report.variables,
            ["ALICE_TOKEN", "JOBS_GPU17", "NVIDIA_API_KEY", "NVIDIA_OTHER"]
        );
        let text = serde_json::to_string(&report).unwrap();
        assert!(!text.contains("secret"), "{text}");
    }

    #[test]
    fn system_words_are_never_user_names() {
        let mut n = Names::default();
        n.home("/home/nvidia");
        n.home("/home");
        n.home("/root");
        n.home("/");
        n.user("root");
        n.user("x");
        assert!(n.users.is_empty());
        assert!(n.homes.is_empty());
        let mut found = Names::default();
        found.homes_in(&json!(["/home/carol/venv/lib:/opt/home/x", {"/home/dave": 1}]));
        assert_eq!(found.users, ["carol", "dave"]);
    }
}

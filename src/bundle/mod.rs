//! Support bundles and node labels: what `snapshot` writes besides the plain facts.
//!
//! A support engineer gets a customer's snapshot by mail; an operator collects one from every node. Three jobs
//! live here, each on facts already collected (nothing here reads the machine, except the user table that
//! [`names`] consults to learn whose names to hide):
//!
//! - [`redact`]: replace user, home and host names and the environment's values off an allow-list, the same
//!   name always by the same placeholder, and say what was replaced (`snapshot --redact`).
//! - [`bound`]: cap the lists that grow with the machine (the library catalogue, collection problems) so that
//!   a snapshot stays a mail attachment, and say what was cut ("and N more").
//! - [`labels`]: GPU feature discovery's node labels and conda's virtual package values
//!   (`snapshot --format labels`).

pub mod bound;
pub mod labels;
pub mod redact;
pub mod scrub;
mod words;

use crate::facts::HostFacts;
use crate::system::{Env, Root, read};
use redact::Names;
use serde_json::Value;
use std::path::Path;

/// The names to hide in a snapshot of `host`, collected with `env` under `root`: the host name, the user and
/// home of the environment (`USER`, `LOGNAME`, `SUDO_USER`, `HOME`), the passwd entry of the uid the program
/// runs as, and every `/home/NAME` that any string of `facts` mentions.
pub fn names(facts: &Value, host: Option<&HostFacts>, env: &Env, root: &Root) -> Names {
    let mut n = Names::default();
    if let Some(h) = host.and_then(|h| h.hostname.as_ref()) {
        n.host(&h.name);
    }
    for var in ["USER", "LOGNAME", "SUDO_USER"] {
        if let Some(u) = env.get(var) {
            n.user(u);
        }
    }
    if let Some(home) = env.get("HOME") {
        n.home(home);
    }
    let uid = host.and_then(|h| h.identity.as_ref()).map(|i| i.uid);
    if let Some((user, home)) = uid.and_then(|uid| passwd_entry(root, uid)) {
        n.user(&user);
        n.home(&home);
    }
    n.homes_in(facts);
    n
}

/// The name and home of `uid` in the root's `/etc/passwd` (passwd(5): `name:password:uid:gid:gecos:home:shell`).
/// uid 0 is `root`, which names nobody.
fn passwd_entry(root: &Root, uid: u32) -> Option<(String, String)> {
    if uid == 0 {
        return None;
    }
    let text = root
        .read_to_string(Path::new("/etc/passwd"), read::CONFIG_TEXT)
        .ok()?;
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() >= 7 && f[2].parse::<u32>().ok() == Some(uid)).then(|| (f[0].to_string(), f[5].to_string()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::host::Identity;

    #[test]
    fn names_come_from_env_passwd_host_and_paths() {
        let t = tempfile::tempdir().unwrap();
        crate::system::put(
            t.path(),
            "etc/passwd",
            b"root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000:Alice:/u/alice:/bin/bash\n",
        );
        let host = HostFacts {
            hostname: Some(crate::host::hostname::HostName {
                name: "gpu7.example.org".into(),
                source: "/etc/hostname".into(),
            }),
            identity: Some(Identity {
                uid: 1000,
                ..Identity::default()
            }),
            ..HostFacts::default()
        };
        let env = Env::build(true, &["USER=alice".into(), "HOME=/u/alice".into()]);
        let facts = serde_json::json!({"x": "/home/bob/lib"});
        let n = names(&facts, Some(&host), &env, &Root::at(t.path()));
        assert_eq!(n.hosts, ["gpu7.example.org"]);
        assert_eq!(n.users, ["alice", "bob"]);
        assert_eq!(n.homes, ["/u/alice", "/home/bob"]);
    }
}

//! The program an image runs: `Entrypoint` followed by `Cmd` (`Cmd` alone without an `Entrypoint`), its first
//! word found as `execvp` would find it, through the image's `PATH` (Docker's default `PATH` when the image
//! sets none), a relative name taken from `WorkingDir`.
//!
//! What stands in front of the program is passed over where its meaning is fixed: a shell running one plain
//! command (`/bin/sh -c "exec app --flag"`, Docker's shell form), an init wrapper (`tini`, `dumb-init`,
//! `catatonit`), a user switcher (`gosu USER`, `su-exec USER`), `env` with its assignments, and an entrypoint
//! script given the program as arguments (`nvidia_entrypoint.sh python …`, `docker-entrypoint.sh app`: such
//! scripts end in `exec "$@"`). Anything else a shell would have to run to know (`cd /app && ./run`, `$VAR`) is
//! not guessed: the error says so and which PATH to pass.

use super::RunConfig;
use crate::system::{Env, Root};
use std::path::{Path, PathBuf};

/// Docker's `PATH` for a container whose image sets none (moby's `DefaultPathEnv`; docs/container-images.md).
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Wrappers passed over (at most this many in a row).
const MAX_WRAPPERS: usize = 8;

/// The program found, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// Its path inside the image, links resolved.
    pub path: PathBuf,
    /// Its path as `execvp` opened it, links not resolved (`/venv/bin/python3`, a link to the base
    /// interpreter: a venv is found from the name the interpreter was started by).
    pub invoked: PathBuf,
    /// How it was found, one line each.
    pub steps: Vec<String>,
    /// The arguments it is given (what follows it in `Entrypoint` + `Cmd`, wrappers passed over): for an
    /// interpreter, what it runs (`-m torch.distributed.run`).
    pub args: Vec<String>,
}

/// What to tell the user who must name the program.
fn pass_a_path(why: String) -> String {
    format!(
        "{why}; name the program instead: cudadiag inspect --image IMAGE /path/in/image/app (a path inside the \
         image)"
    )
}

/// Finds the program the image runs.
pub fn program(root: &Root, config: &RunConfig, env: &Env) -> Result<Program, String> {
    let mut argv: Vec<String> = config.entrypoint.clone();
    if argv.is_empty() || !config.cmd.is_empty() {
        argv.extend(config.cmd.iter().cloned());
    }
    let shown = format!("{argv:?}");
    if argv.is_empty() {
        return Err(pass_a_path("the image has neither Entrypoint nor Cmd".into()));
    }
    let mut steps = vec![format!("Entrypoint + Cmd: {shown}")];
    let mut i = 0;
    for _ in 0..=MAX_WRAPPERS {
        let Some(word) = argv.get(i).cloned() else {
            return Err(pass_a_path(format!(
                "{shown}: nothing is left to run after the wrappers"
            )));
        };
        let base = word.rsplit('/').next().unwrap_or(&word).to_string();
        if is_shell(&base) {
            let Some(flag) = argv.get(i + 1) else {
                return Err(pass_a_path(format!("{shown}: an interactive shell, {word}")));
            };
            if !(flag.starts_with('-') && flag.contains('c')) {
                return Err(pass_a_path(format!("{shown}: the shell {word} runs a script")));
            }
            let Some(text) = argv.get(i + 2) else {
                return Err(pass_a_path(format!("{shown}: {word} {flag} without a command")));
            };
            let words = plain_command(text).ok_or_else(|| {
                pass_a_path(format!(
                    "{word} runs {text:?}, which only a shell can resolve (operators, quotes, variables)"
                ))
            })?;
            steps.push(format!("{word} {flag} runs the plain command {text:?}"));
            argv = words;
            i = 0;
            continue;
        }
        let (invoked, path) = find(root, &word, config, env).map_err(pass_a_path)?;
        if let Some(next) = wrapped(&base, &argv[i + 1..]) {
            steps.push(format!(
                "{} is the wrapper {base}: it runs what follows it",
                path.display()
            ));
            i += 1 + next;
            continue;
        }
        if is_script(root, &path) {
            match argv.get(i + 1) {
                Some(next) if !next.starts_with('-') => {
                    steps.push(format!(
                        "{} is a script: taking the program it is given, {next:?} (entrypoint scripts end in \
                         `exec \"$@\"`)",
                        path.display()
                    ));
                    i += 1;
                    continue;
                }
                _ => {
                    return Err(pass_a_path(format!(
                        "the image runs the script {}: what it starts cannot be known without running it",
                        path.display()
                    )));
                }
            }
        }
        if word.contains('/') {
            steps.push(format!("{word} is {}", path.display()));
        } else {
            steps.push(format!("{word} found through PATH: {}", path.display()));
        }
        if base.starts_with("python") || base == "node" || base == "java" || base == "ruby" {
            steps.push(format!(
                "{base} is an interpreter: the CUDA libraries it loads at run time (torch, cupy, …) are not its \
                 ELF dependencies; name them as paths inside the image to judge them"
            ));
        }
        let args = argv[i + 1..].to_vec();
        return Ok(Program {
            path,
            invoked,
            steps,
            args,
        });
    }
    Err(pass_a_path(format!("{shown}: more than {MAX_WRAPPERS} wrappers")))
}

fn is_shell(base: &str) -> bool {
    matches!(base, "sh" | "bash" | "dash" | "ash" | "zsh" | "ksh")
}

/// For a wrapper the program follows, how many arguments it takes before the program.
fn wrapped(base: &str, rest: &[String]) -> Option<usize> {
    match base {
        "tini" | "tini-static" | "dumb-init" | "catatonit" => {
            let mut n = 0;
            while let Some(a) = rest.get(n) {
                if a == "--" {
                    return Some(n + 1);
                }
                if !a.starts_with('-') {
                    break;
                }
                n += 1;
            }
            Some(n)
        }
        "gosu" | "su-exec" => Some(1),
        "env" => Some(
            rest.iter()
                .take_while(|a| a.starts_with('-') || a.contains('='))
                .count(),
        ),
        _ => None,
    }
}

/// The words of a command a shell would run as one program, when nothing in it needs the shell: `exec` and
/// leading `NAME=value` assignments dropped.
fn plain_command(text: &str) -> Option<Vec<String>> {
    if text.chars().any(|c| ";&|`$()<>\"'\\*?[]{}~#\n".contains(c)) {
        return None;
    }
    let mut words: Vec<String> = text.split_whitespace().map(str::to_string).collect();
    while let Some(w) = words.first() {
        if w == "exec" || (w.contains('=') && !w.starts_with('=') && !w.contains('/')) {
            words.remove(0);
        } else {
            break;
        }
    }
    (!words.is_empty()).then_some(words)
}

/// Finds `word` as `execvp` does: a name with `/` from the working directory, else each `PATH` entry in turn,
/// the first executable regular file. Returns its path as opened and its real path.
fn find(root: &Root, word: &str, config: &RunConfig, env: &Env) -> Result<(PathBuf, PathBuf), String> {
    let workdir = if config.working_dir.is_empty() {
        "/"
    } else {
        &config.working_dir
    };
    if word.contains('/') {
        let p = Path::new("/").join(workdir).join(word);
        return executable(root, &p)
            .map(|real| (p, real))
            .ok_or_else(|| format!("{word}: no such executable in the image"));
    }
    let path = env.get("PATH").unwrap_or(DEFAULT_PATH);
    for dir in path.split(':') {
        let dir = if dir.is_empty() { workdir } else { dir };
        let p = Path::new("/").join(workdir).join(dir).join(word);
        if let Some(real) = executable(root, &p) {
            return Ok((p, real));
        }
    }
    Err(format!("{word}: not found in the image's PATH ({path})"))
}

/// The real path of `p` in the image when it is an executable regular file.
fn executable(root: &Root, p: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let real = root.resolve(p).ok()?;
    let meta = root.metadata(&real).ok()?;
    (meta.is_file() && meta.permissions().mode() & 0o111 != 0).then_some(real)
}

/// Does the file start with `#!`?
fn is_script(root: &Root, p: &Path) -> bool {
    use std::io::Read;
    let Ok(f) = root.open(p) else {
        return false;
    };
    let mut head = [0u8; 2];
    f.take(2).read_exact(&mut head).is_ok() && &head == b"#!"
}

/// A path the user named inside the image: its real path, when a regular file.
pub fn named(root: &Root, p: &Path, working_dir: &str) -> Result<PathBuf, String> {
    let p = Path::new("/")
        .join(if working_dir.is_empty() { "/" } else { working_dir })
        .join(p);
    let real = root.resolve(&p).map_err(|e| {
        format!(
            "{}: not in the image ({e}), or a data file, which is not unpacked (binaries, scripts, /etc and \
                 package metadata are)",
            p.display()
        )
    })?;
    match root.metadata(&real) {
        Ok(m) if m.is_file() => Ok(real),
        Ok(_) => Err(format!("{}: not a regular file in the image", p.display())),
        Err(e) => Err(format!("{}: {e}", p.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::put;
    use std::os::unix::fs::PermissionsExt;

    fn exe(dir: &Path, path: &str, bytes: &[u8]) {
        put(dir, path, bytes);
        let f = dir.join(path.trim_start_matches('/'));
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn config(entrypoint: &[&str], cmd: &[&str]) -> RunConfig {
        RunConfig {
            entrypoint: entrypoint.iter().map(|s| s.to_string()).collect(),
            cmd: cmd.iter().map(|s| s.to_string()).collect(),
            working_dir: "/app".into(),
            ..RunConfig::default()
        }
    }

    #[test]
    fn finds_the_program_behind_wrappers() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        exe(d, "/usr/local/bin/app", b"\x7fELF");
        exe(d, "/usr/bin/tini", b"\x7fELF");
        exe(d, "/bin/sh", b"\x7fELF");
        exe(d, "/entry.sh", b"#!/bin/sh\nexec \"$@\"\n");
        exe(d, "/app/run", b"\x7fELF");
        put(d, "/usr/local/bin/notexec", b"\x7fELF");
        let root = Root::at(d);
        let env = Env::empty();
        let got = |e: &[&str], c: &[&str]| program(&root, &config(e, c), &env).map(|p| p.path);
        assert_eq!(got(&[], &["app"]).unwrap(), Path::new("/usr/local/bin/app"));
        assert_eq!(
            got(&["tini", "-g", "--"], &["app", "-x"]).unwrap(),
            Path::new("/usr/local/bin/app")
        );
        assert_eq!(
            got(&["/bin/sh", "-c", "exec app --port 80"], &[]).unwrap(),
            Path::new("/usr/local/bin/app")
        );
        assert_eq!(
            got(&["/entry.sh"], &["app"]).unwrap(),
            Path::new("/usr/local/bin/app")
        );
        assert_eq!(got(&["./run"], &[]).unwrap(), Path::new("/app/run"));
        // What only a shell knows is not guessed, and the message says what to pass.
        let e = got(&["/bin/sh", "-c", "cd /app && ./run"], &[]).unwrap_err();
        assert!(
            e.contains("only a shell can resolve") && e.contains("--image IMAGE /path"),
            "{e}"
        );
        assert!(got(&["/entry.sh"], &[]).unwrap_err().contains("script /entry.sh"));
        assert!(got(&[], &[]).unwrap_err().contains("neither Entrypoint nor Cmd"));
        // Not executable: not what execvp runs.
        assert!(
            got(&["notexec"], &[])
                .unwrap_err()
                .contains("not found in the image's PATH")
        );
    }
}

/// Who the container's process is, from the config's `User` (`name`, `uid`, `name:group`, `uid:gid`; empty is
/// root), names looked up in the image's `/etc/passwd` and `/etc/group` as the engine does, supplementary
/// groups being those `/etc/group` lists the user in. `None` when it cannot be told ([`lookup`] says why).
pub fn identity(root: &Root, user: &str) -> Option<crate::facts::host::Identity> {
    lookup(root, user).ok()
}

/// [`identity`], or why there is none: a name the image's files do not list (the engine then refuses to start
/// the container: "unable to find user NAME: no matching entries in passwd file"), or a file cudadiag did not
/// read (over its size bound, unreadable). A numeric `User` needs no entry: the engine runs it as is.
pub fn lookup(root: &Root, user: &str) -> Result<crate::facts::host::Identity, UserProblem> {
    let (u, g) = match user.split_once(':') {
        Some((u, g)) => (u, Some(g)),
        None => (user, None),
    };
    // A missing file lists nobody; one not read (too large, unreadable) leaves the user unchecked.
    let read = |p: &str| match root.read_to_string(Path::new(p), crate::system::read::CONFIG_TEXT) {
        Ok(t) => Ok(t),
        Err(e) if e.is_not_found() => Ok(String::new()),
        Err(e) => Err(UserProblem::Unread {
            file: p.to_string(),
            reason: e.to_string(),
        }),
    };
    let needs_passwd = !u.is_empty();
    let passwd = if needs_passwd {
        read("/etc/passwd")
    } else {
        Ok(String::new())
    };
    let passwd = match passwd {
        Ok(t) => t,
        // A numeric uid runs without its entry; only its primary group is then unknown (0, as the engine does).
        Err(_) if u.parse::<u32>().is_ok() => String::new(),
        Err(e) => return Err(e),
    };
    let group = read("/etc/group")?;
    let unknown = |name: &str, file: &str| UserProblem::Unknown {
        name: name.to_string(),
        file: file.to_string(),
    };
    // name:x:uid:gid:… and name:x:gid:member,member
    let fields = |text: &str, name: &str| -> Option<Vec<String>> {
        text.lines()
            .map(|l| l.split(':').map(str::to_string).collect::<Vec<_>>())
            .find(|f| f.first().map(String::as_str) == Some(name))
    };
    let (uid, name, mut gid) = if u.is_empty() {
        (0, Some("root".to_string()), 0)
    } else if let Ok(uid) = u.parse::<u32>() {
        let entry = passwd
            .lines()
            .map(|l| l.split(':').collect::<Vec<_>>())
            .find(|f| f.get(2).and_then(|x| x.parse::<u32>().ok()) == Some(uid));
        let name = entry.as_ref().and_then(|f| f.first().map(|s| s.to_string()));
        let gid = entry
            .and_then(|f| f.get(3).and_then(|x| x.parse().ok()))
            .unwrap_or(0);
        (uid, name, gid)
    } else {
        let f = fields(&passwd, u).ok_or_else(|| unknown(u, "/etc/passwd"))?;
        let number = |i: usize| {
            f.get(i)
                .and_then(|x| x.parse().ok())
                .ok_or_else(|| unknown(u, "/etc/passwd"))
        };
        (number(2)?, Some(u.to_string()), number(3)?)
    };
    if let Some(g) = g {
        gid = match g.parse::<u32>() {
            Ok(n) => n,
            Err(_) => fields(&group, g)
                .and_then(|f| f.get(2)?.parse().ok())
                .ok_or_else(|| unknown(g, "/etc/group"))?,
        };
    }
    let mut groups = vec![gid];
    if let Some(name) = &name {
        for l in group.lines() {
            let f: Vec<&str> = l.split(':').collect();
            if f.get(3).is_some_and(|m| m.split(',').any(|x| x == name))
                && let Some(n) = f.get(2).and_then(|x| x.parse().ok())
                && !groups.contains(&n)
            {
                groups.push(n);
            }
        }
    }
    Ok(crate::facts::host::Identity {
        uid,
        gid,
        groups,
        source: format!(
            "the image's User {:?} (its /etc/passwd and /etc/group)",
            if user.is_empty() { "root" } else { user }
        ),
    })
}

pub use crate::facts::image::UserProblem;

#[cfg(test)]
mod identity_tests {
    use super::*;
    use crate::system::put;

    #[test]
    fn users_resolve_through_the_images_files() {
        let t = tempfile::tempdir().unwrap();
        put(
            t.path(),
            "/etc/passwd",
            b"root:x:0:0::/root:/bin/sh\napp:x:1000:1000::/home/app:/bin/sh\n",
        );
        put(
            t.path(),
            "/etc/group",
            b"root:x:0:\nvideo:x:44:app\napp:x:1000:\n",
        );
        let root = Root::at(t.path());
        let id = identity(&root, "app").unwrap();
        assert_eq!((id.uid, id.gid, id.groups.clone()), (1000, 1000, vec![1000, 44]));
        let id = identity(&root, "1000:video").unwrap();
        assert_eq!((id.uid, id.gid), (1000, 44));
        assert_eq!(identity(&root, "").unwrap().uid, 0);
        assert_eq!(identity(&root, "4242").unwrap().gid, 0);
        assert!(identity(&root, "nobody-here").is_none());
    }
}

//! `explain "libcudart.so.12: cannot open shared object file"`: for each library a pasted loader error names,
//! which CUDA major it belongs to, which packages install it (pip, conda, deb/rpm: the bundled tables,
//! `rules::packages`), and where copies of it are on this machine (or under `--root`), found as `inspect`
//! finds them for a missing library (`loader::copies`).

use crate::diagnose::Providers;
use crate::facts::loader::{Copy, Library, Resolution};
use crate::system::Root;
use serde::Serialize;
use std::collections::BTreeSet;

/// One library named by the query.
#[derive(Debug, Serialize)]
pub struct Named {
    /// What the tables know of it; `None` for a library they do not know (not a CUDA library).
    #[serde(flatten)]
    pub providers: Option<Providers>,
    /// The SONAME (always set, also when the tables do not know it).
    #[serde(rename = "library")]
    pub soname: String,
    /// Files of that library on the machine: the name itself, or other versions of it.
    pub copies: Vec<Copy>,
}

/// The SONAMEs a query names: words like `libcudart.so.12` or `libnvrtc.so`.
pub fn sonames(query: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    query
        .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+')))
        .map(|w| w.trim_end_matches(['.', '-']))
        .filter(|w| w.starts_with("lib") && crate::loader::dlopen::is_soname(w))
        .filter(|w| seen.insert(w.to_string()))
        .map(str::to_string)
        .take(crate::explain::read::MAX_NAMES)
        .collect()
}

/// What is known of each library the query names (and of those it implies without naming their file:
/// `implied`), with its copies under `root`.
pub fn lookup(query: &str, implied: &[String], root: &Root) -> Vec<Named> {
    let mut names = sonames(query);
    for n in implied {
        if !names.contains(n) {
            names.push(n.clone());
        }
    }
    if names.is_empty() {
        return Vec::new();
    }
    let platform = crate::host::libcuda::host_platform(root);
    // The same search `inspect` makes for a missing library: a resolution whose requests all failed.
    let mut res = Resolution {
        binary: String::new(),
        system_dirs: platform.system_dirs.clone(),
        system_dirs_source: platform.system_dirs_source.clone(),
        libraries: names.iter().map(|n| Library::unresolved(n, "", 0)).collect(),
        ..Resolution::default()
    };
    crate::loader::copies::fill(root, &platform, &mut res);
    res.libraries
        .into_iter()
        .map(|l| Named {
            providers: crate::explain::sonames::providers(&l.soname),
            soname: l.soname,
            copies: l.copies,
        })
        .collect()
}

/// The human text for the libraries named.
pub fn human(named: &[Named], root: &Root) -> String {
    let mut s = String::new();
    let machine = if root.is_host() {
        "this machine".to_string()
    } else {
        format!("--root {}", root.dir().display())
    };
    for n in named {
        let name = crate::report::escape(&n.soname);
        match &n.providers {
            Some(p) => {
                let majors: Vec<String> = p.majors.iter().map(u32::to_string).collect();
                s.push_str(&format!("{name}: a CUDA {} library\n", majors.join(" and ")));
                for d in &p.pip {
                    let extra = d
                        .toolkit_extra
                        .as_ref()
                        .map(|e| format!(" (or 'cuda-toolkit[{e}]=={}.*')", d.cuda))
                        .unwrap_or_default();
                    // A row of pip_cuda.toml cites its keys; a name the CUDA 11 rules give says where from.
                    let table = if d.source.contains(' ') {
                        ""
                    } else {
                        "pip_cuda.toml: "
                    };
                    s.push_str(&format!(
                        "  pip        pip install {}{extra}    [CUDA {}; {table}{}]\n",
                        d.name, d.cuda, d.source
                    ));
                }
                if let Some(c) = &p.conda {
                    for m in &p.majors {
                        // Up to CUDA 11 the toolkit came to conda as one package per release.
                        let line = if c == "cudatoolkit" {
                            format!("conda install -c conda-forge 'cudatoolkit={m}'")
                        } else {
                            format!("conda install -c conda-forge {c} 'cuda-version={m}'")
                        };
                        s.push_str(&format!("  conda      {line}\n"));
                    }
                }
                let src = p
                    .source
                    .as_ref()
                    .map(|x| format!("    [cuda_packages.toml: {x}]"))
                    .unwrap_or_default();
                if !p.deb.is_empty() {
                    s.push_str(&format!(
                        "  apt        sudo apt-get install {}{src}\n",
                        p.deb.join(" | ")
                    ));
                    s.push_str(&format!("  dnf        sudo dnf install {}\n", p.rpm.join(" | ")));
                    if p.deb.iter().any(|d| d.ends_with("-N")) {
                        s.push_str(
                            "             (N: the minor CUDA release the program was built with; \
                             `apt-cache search` / `dnf list` shows those available)\n",
                        );
                    }
                }
            }
            None => s.push_str(&format!(
                "{name}: not a CUDA library cudadiag's tables know; install the package that provides it\n"
            )),
        }
        let same: Vec<&Copy> = n.copies.iter().filter(|c| c.same_name).collect();
        let other: Vec<&Copy> = n.copies.iter().filter(|c| !c.same_name).collect();
        if same.is_empty() && other.is_empty() {
            s.push_str(&format!("  on {machine}: no copy found\n"));
        }
        for c in same {
            let dir = c.path.rsplit_once('/').map_or("", |(d, _)| d);
            s.push_str(&format!(
                "  on {machine}: {}\n             not found at run time? add its directory: \
                 `export LD_LIBRARY_PATH={dir}` (or list it in /etc/ld.so.conf.d/ and run ldconfig)\n",
                crate::report::escape(&c.line())
            ));
        }
        for c in other {
            s.push_str(&format!(
                "  on {machine}: another version: {}\n",
                crate::report::escape(&c.line())
            ));
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sonames_in_pasted_errors() {
        assert_eq!(
            sonames(
                "./app: error while loading shared libraries: libcudart.so.12: cannot open shared object file"
            ),
            ["libcudart.so.12"]
        );
        assert_eq!(
            sonames("OSError: libcudnn.so.9: cannot open; libnvrtc.so and libcudnn.so.9."),
            ["libcudnn.so.9", "libnvrtc.so"]
        );
        assert!(sonames("no kernel image is available").is_empty());
    }
}

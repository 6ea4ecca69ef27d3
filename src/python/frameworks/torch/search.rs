//! torch's own search for a CUDA library in `sys.path` (`_preload_cuda_deps` up to 2.9, `_preload_cuda_lib`
//! and `_get_cuda_dep_paths` from 2.9): the first entry holding a match wins, and within it the first match of
//! Python's `glob` (directory order; several matches in one directory are reported as such).

use super::super::{Ctx, LoadError, Process};
use std::path::{Path, PathBuf};

/// Where torch looks for a library in one `sys.path` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layouts {
    /// 2.6: only entries with an `nvidia` directory; `nvidia/<folder>/lib`, else `<folder>/lib`.
    V2_6,
    /// From 2.9: `nvidia/<folder>/lib`, `nvidia/cu<major>/lib` (major of `torch.version.cuda`), `<folder>/lib`,
    /// all of them, in that order.
    V2_9,
}

/// A preload that raises: torch's `ValueError` for a library found in no entry, or the `OSError` of loading
/// the one found.
#[derive(Debug, Clone)]
pub struct PreloadError {
    /// The exception as the user sees it.
    pub message: String,
    /// The failed load, for an `OSError`; for a `ValueError`, what was looked for.
    pub load: LoadError,
}

impl PreloadError {
    /// The load that failed (or the library found nowhere).
    pub fn into_load(self) -> LoadError {
        self.load
    }
}

/// Does a file name match torch's pattern `libX.so.*[0-9]`: the text before `*`, anything, then a digit?
fn matches(name: &str, glob: &str) -> bool {
    let Some(prefix) = glob.strip_suffix("*[0-9]") else {
        return name == glob;
    };
    name.len() > prefix.len() && name.starts_with(prefix) && name.ends_with(|c: char| c.is_ascii_digit())
}

/// The files of `dir` matching `glob`, sorted (Python's `glob` gives directory order, which the file system
/// decides: with several matches the report says so).
fn glob_in(ctx: &Ctx, dir: &Path, glob: &str) -> Vec<PathBuf> {
    ctx.root
        .read_dir_names(dir, |n| matches(&n.to_string_lossy(), glob))
        .unwrap_or_default()
        .into_iter()
        .map(|n| dir.join(n))
        .collect()
}

/// The candidates of one `sys.path` entry, in torch's order, each with the directory's relative name.
fn candidates(
    ctx: &Ctx,
    layouts: Layouts,
    major: Option<&str>,
    entry: &Path,
    folder: &str,
    glob: &str,
) -> Vec<PathBuf> {
    match layouts {
        Layouts::V2_6 => {
            if !ctx.root.exists(&entry.join("nvidia")) {
                return Vec::new();
            }
            let first = glob_in(ctx, &entry.join("nvidia").join(folder).join("lib"), glob);
            if first.is_empty() {
                glob_in(ctx, &entry.join(folder).join("lib"), glob)
            } else {
                first
            }
        }
        Layouts::V2_9 => {
            let mut out = glob_in(ctx, &entry.join("nvidia").join(folder).join("lib"), glob);
            if let Some(m) = major {
                out.extend(glob_in(ctx, &entry.join(format!("nvidia/cu{m}/lib")), glob));
            }
            out.extend(glob_in(ctx, &entry.join(folder).join("lib"), glob));
            out
        }
    }
}

/// `sys.path` as Python prints the list (`['', '/usr/lib/python311.zip', …]`).
fn syspath_repr(ctx: &Ctx) -> String {
    let items: Vec<String> = ctx
        .python
        .syspath
        .paths()
        .iter()
        .map(|p| format!("'{}'", p.replace('\\', "\\\\").replace('\'', "\\'")))
        .collect();
    format!("[{}]", items.join(", "))
}

/// Where torch's search for one library ends ([`find`]): the first `sys.path` entry with a candidate, and
/// that entry's candidates in torch's order.
#[derive(Debug, Clone)]
pub struct Found {
    /// The entry's index in `sys.path`.
    pub index: usize,
    /// The entry.
    pub dir: PathBuf,
    /// Its candidates (at least one): the first is loaded.
    pub files: Vec<PathBuf>,
}

impl Found {
    /// The file torch loads.
    pub fn first(&self) -> &Path {
        &self.files[0]
    }
}

/// torch's search for one library (`folder`'s `glob`) in `sys.path`, without loading it: reads only
/// directories, so the searches of a list can be made before any of its loads.
/// Remembered for the environment ([`crate::python::frameworks::PyEnv::remembered`]).
pub fn find(ctx: &Ctx, layouts: Layouts, major: Option<&str>, folder: &str, glob: &str) -> Option<Found> {
    let question = format!("torch-preload {layouts:?} {major:?} {folder} {glob}");
    ctx.python.remembered(&question, || {
        ctx.python
            .syspath
            .entries
            .iter()
            .enumerate()
            .filter(|(_, entry)| entry.path.is_absolute())
            .find_map(|(index, entry)| {
                let files = candidates(ctx, layouts, major, &entry.path, folder, glob);
                (!files.is_empty()).then(|| Found {
                    index,
                    dir: entry.path.clone(),
                    files,
                })
            })
    })
}

/// Preloads one library as torch does, once [`find`] has searched: `ctypes.CDLL` of the first candidate of
/// the first `sys.path` entry with one (`RTLD_LOCAL`). Found nowhere: the `ValueError` when `required`, else
/// nothing.
pub fn preload_found(
    ctx: &Ctx,
    found: Option<&Found>,
    folder: &str,
    glob: &str,
    required: bool,
    p: &mut dyn Process,
) -> Result<(), PreloadError> {
    if let Some(found) = found {
        let mut search = format!(
            "sys.path[{}] {}: first match of {folder}'s {glob}",
            found.index,
            found.dir.display()
        );
        if found.files.len() > 1 {
            search.push_str(&format!(
                " ({} files match; Python's glob takes them in directory order)",
                found.files.len()
            ));
        }
        return match p.load_path("torch", found.first(), &search, false) {
            Ok(_) => Ok(()),
            Err(e) => Err(PreloadError {
                message: format!("OSError: {}", e.message),
                load: e,
            }),
        };
    }
    if !required {
        return Ok(());
    }
    let message = format!(
        "ValueError: {glob} not found in the system path {}",
        syspath_repr(ctx)
    );
    Err(PreloadError {
        load: LoadError {
            name: glob.to_string(),
            requester: "torch".into(),
            message: message.clone(),
            library: None,
        },
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn torch_globs_match_a_versioned_name_ending_in_a_digit() {
        assert!(matches("libcublasLt.so.13", "libcublasLt.so.*[0-9]"));
        assert!(matches(
            "libnvrtc-builtins.so.13.2",
            "libnvrtc-builtins.so.*[0-9]"
        ));
        assert!(!matches("libcublas.so", "libcublas.so.*[0-9]"));
        assert!(!matches("libcublas.so.13.bak", "libcublas.so.*[0-9]"));
        assert!(!matches("libcublasLt.so.13", "libcublas.so.*[0-9]"));
    }
}

//! `sys.path` of a Python interpreter or environment, computed from files alone, as CPython computes it at
//! start-up: first the interpreter's own path configuration (`Modules/getpath.py` from 3.11, `getpath.c`
//! before: `PYTHONPATH`, the standard library's zip, directory and `lib-dynload` under the prefixes found
//! from the executable, `pyvenv.cfg` or `PYTHONHOME`), then `site.main()` (`Lib/site.py`: the venv's
//! site-packages, the user site, the system site-packages of each prefix, each directory's `.pth` files in
//! sorted name order), then the script's directory in front. `docs/python-syspath.md` gives each rule with
//! its source.
//!
//! Every entry carries why it is there ([`Why`]): the rule, the `.pth` file and line, the variable. What
//! CPython would run rather than read (a `.pth` line that starts with `import`, `sitecustomize`,
//! `usercustomize`) is listed in [`SysPath::not_modelled`] and never run: nothing here executes Python.
//! Every read goes through the [`Root`], bounded by [`crate::system::read`].
//!
//! Nothing uses this module yet: it is the first piece of the Python environment facts (issue #31) that a
//! later `cudadiag import` builds on (torch walks `sys.path` to preload its NVIDIA wheels).

mod getpath;
/// The interpreter a request names: `sys.path`'s first step, for a caller that wants it ahead.
pub use getpath::interpreter;
mod model;
mod site;
#[cfg(test)]
mod tests;

use crate::system::{Env, Root};
use model::Vars;

pub use model::{
    Entry, Flags, Main, NotModelled, PyVersion, Request, SiteKind, SysPath, SysPathError, Target, UserSite,
    UserSiteOff, Venv, Why,
};

/// Computes `sys.path` for `req` on `root` with the environment `env`, reading files only.
pub fn compute(root: &Root, env: &Env, req: &Request) -> Result<SysPath, SysPathError> {
    let vars = Vars::new(env, &req.flags);
    let config = getpath::configure(root, env, &vars, req)?;
    Ok(site::run(root, env, &vars, req, config))
}

//! `loader`: which file glibc's dynamic loader would map for every library of a binary, and why.
//!
//! This is an emulation of `ld.so`, never a call to it: nothing is executed or loaded (`ldd` may execute the
//! binary). It follows glibc's own code, cited per module:
//! - [`search`]: the search order of `_dl_map_new_object` in `elf/dl-load.c` (DT_RPATH of the loader chain
//!   unless the object has DT_RUNPATH, `LD_LIBRARY_PATH`, DT_RUNPATH of the object only, `/etc/ld.so.cache`,
//!   the default directories unless `DF_1_NODEFLIB`), with `open_verify`'s class and machine checks;
//! - [`cache`]: `elf/dl-cache.c`'s reading of `ld.so.cache`;
//! - [`platform`]: the default directories, `$LIB` and `$PLATFORM`, and the glibc-hwcaps subdirectories of
//!   the machine (`elf/dl-hwcaps.c`, `sysdeps/x86/get-isa-level.h`);
//! - [`resolve`]: the breadth-first walk of `_dl_map_object_deps` (`elf/dl-deps.c`), LD_PRELOAD and
//!   `/etc/ld.so.preload` (`elf/rtld.c`), the `_dl_lookup_map` reuse of objects already loaded;
//! - [`dlopen`]: the CUDA libraries loaded with `dlopen` (`libcuda.so.1` by cudart, …), each resolved as
//!   `_dl_open` does from its caller (`__RTLD_CALLMAP`).
//!
//! Not modelled (each would be a difference the differential script reports): the legacy hwcap subdirectories
//! and cache entries outside x86-64 and before glibc 2.26 (x86-64 glibc 2.26–2.36 is modelled: [`platform`],
//! [`cache::LegacyHwcaps`]), `LD_AUDIT`, DT_AUXILIARY/DT_FILTER, `dlmopen` namespaces, and secure-execution
//! through file capabilities (setuid/setgid are modelled).
//!
//! `$ORIGIN` is the directory of the name an object was opened by, the link's and not its target's, for every
//! object but a program the kernel starts (its real path, from `/proc/self/exe`): `docs/loader-origin.md`.
//!
//! Every step of every search is kept as a [`crate::facts::loader::Step`] in a trail, so a missing library can
//! be explained the way libtree does ("rpath skipped: runpath is set"); the results are facts
//! ([`crate::facts::loader`]). All reads go through [`crate::system::Root`] and the captured
//! [`crate::system::Env`], so `--root` and `--env` replay another machine.

pub mod cache;
pub mod copies;
pub mod dlopen;
pub mod dlopen_table;
pub mod foreign;
pub mod name;
pub mod object;
pub mod origin;
pub mod platform;
pub mod process;
pub mod resolve;
pub mod search;

pub use object::Files;
pub use resolve::{Earlier, MainSymbols, resolve, resolve_after, resolve_alongside, resolve_with};

//! Regression (issue #29, item 1): `$ORIGIN` through a symbolic link. glibc takes a shared library's `$ORIGIN`
//! from the name it opened the file by, the link's directory, not its target's (`_dl_new_object` in
//! `elf/dl-object.c`); only a program the kernel starts gets the directory of its real path
//! (`/proc/self/exe`). cudadiag took every inspected file's `$ORIGIN` from its real path: a library inspected
//! through a farm of per-file links (Spack views, Nix profiles, Bazel runfiles, `cp -as`) had its RUNPATH
//! followed back into the tree the links point at, and found there the libraries the farm lacks.
//!
//! The differential: symlink farms of `cc`-built libraries (per-file links, absolute and relative, linked
//! directories, a linked program), each library with a RUNPATH or an RPATH of `$ORIGIN/../dep` that lands
//! elsewhere through the link than through its target, where a decoy waits; glibc's own trace of each
//! (`ld.so FILE` for a library, the program itself started for a program) is the answer, and every library of
//! it must be resolved to the same path. `docs/loader-origin.md` says what the loader relies on.

use crate::support::loader_build::{self as build, glibc_exec_list, glibc_list, lib};

use cudadiag::facts::BinaryFacts;
use cudadiag::inspect;
use cudadiag::system::{Env, Root};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// One thing to resolve: a file as named, how glibc is asked, and the library whose answer tells the two
/// readings of `$ORIGIN` apart, with the path glibc gives it.
struct Case {
    what: &'static str,
    entry: PathBuf,
    /// Started by the kernel (a program) or named to ld.so (a library, as `dlopen` opens it).
    exec: bool,
    key: &'static str,
    want: String,
}

/// The libraries and programs every case shares, under `t`:
/// - `sys/libdep.so`: the copy a RUNPATH's last directory holds (the system's, in the H200 case);
/// - `real/pkg/lib/libtop_{runpath,rpath}.so`: NEEDED `libdep.so`, searched in `$ORIGIN/../dep` then `sys`;
/// - `real/pkg/dep/libdep.so`: the copy beside the link targets, the decoy for every farm;
/// - `real/bin/app{,_rpath}`: programs needing `libtop_runpath.so` (`libtop_rpath.so`) from `$ORIGIN/../pkg/lib`.
fn build_tree(t: &Path) {
    let sys = lib(&t.join("sys"), "libdep.so", "dep", &[], &[]);
    lib(&t.join("real/pkg/dep"), "libdep.so", "dep", &[], &[]);
    let search = format!("-Wl,-rpath,$ORIGIN/../dep:{}", t.join("sys").display());
    let lib_dir = t.join("real/pkg/lib");
    let runpath = lib(
        &lib_dir,
        "libtop_runpath.so",
        "top",
        &[&sys],
        &[&search, "-Wl,--enable-new-dtags"],
    );
    let rpath = lib(
        &lib_dir,
        "libtop_rpath.so",
        "top",
        &[&sys],
        &[&search, "-Wl,--disable-new-dtags"],
    );
    build::exe(
        &t.join("real/bin/app"),
        &[&runpath],
        &["-Wl,-rpath,$ORIGIN/../pkg/lib", "-Wl,--enable-new-dtags"],
    );
    build::exe(
        &t.join("real/bin/app_rpath"),
        &[&rpath],
        &["-Wl,-rpath,$ORIGIN/../pkg/lib", "-Wl,--disable-new-dtags"],
    );
}

/// The farms over the tree, and the cases they give:
/// - `farm_abs`: per-file absolute links to the libraries and the programs, with a `dep/libdep.so` of its own;
/// - `farm_rel`: per-file relative links, without `dep` (a wheel left out): the RUNPATH goes on to `sys`;
/// - `farm_dirlink`: its `pkg/lib` an absolute link to the real directory, a `dep` of its own that the kernel
///   never reaches (`lib/..` is the target's parent);
/// - `farm_pkglink`: its `pkg` a relative link to the real one;
/// - `farm_abs/bin/app_here`: a real program of the farm loading the linked libraries.
fn farms(t: &Path) -> Vec<Case> {
    let real = t.join("real");
    let tops = ["libtop_runpath.so", "libtop_rpath.so"];
    // Per-file absolute links, with the farm's own dep.
    let abs = t.join("farm_abs");
    std::fs::create_dir_all(abs.join("pkg/lib")).unwrap();
    std::fs::create_dir_all(abs.join("bin")).unwrap();
    lib(&abs.join("pkg/dep"), "libdep.so", "dep", &[], &[]);
    for top in tops {
        symlink(real.join("pkg/lib").join(top), abs.join("pkg/lib").join(top)).unwrap();
    }
    for app in ["app", "app_rpath"] {
        symlink(real.join("bin").join(app), abs.join("bin").join(app)).unwrap();
    }
    // Per-file relative links, no dep: the wheel left out.
    let rel = t.join("farm_rel");
    std::fs::create_dir_all(rel.join("pkg/lib")).unwrap();
    std::fs::create_dir_all(rel.join("bin")).unwrap();
    for top in tops {
        symlink(
            Path::new("../../../real/pkg/lib").join(top),
            rel.join("pkg/lib").join(top),
        )
        .unwrap();
    }
    symlink("../../real/bin/app", rel.join("bin/app")).unwrap();
    // Linked directories.
    let dirlink = t.join("farm_dirlink");
    std::fs::create_dir_all(dirlink.join("pkg")).unwrap();
    symlink(real.join("pkg/lib"), dirlink.join("pkg/lib")).unwrap();
    lib(&dirlink.join("pkg/dep"), "libdep.so", "dep", &[], &[]);
    let pkglink = t.join("farm_pkglink");
    std::fs::create_dir_all(&pkglink).unwrap();
    symlink("../real/pkg", pkglink.join("pkg")).unwrap();
    // A program of the farm's own, loading the linked libraries.
    let here = build::exe(
        &abs.join("bin/app_here"),
        &[&abs.join("pkg/lib/libtop_runpath.so")],
        &["-Wl,-rpath,$ORIGIN/../pkg/lib", "-Wl,--enable-new-dtags"],
    );

    let s = |p: PathBuf| p.to_string_lossy().into_owned();
    let sys_dep = s(t.join("sys/libdep.so"));
    let mut cases = Vec::new();
    for top in tops {
        let mut add = |what, entry: PathBuf, want: String| {
            cases.push(Case {
                what,
                entry,
                exec: false,
                key: "libdep.so",
                want,
            })
        };
        add(
            "per-file absolute link: the farm's own dep",
            abs.join("pkg/lib").join(top),
            s(abs.join("pkg/lib/../dep/libdep.so")),
        );
        add(
            "per-file relative link, dep left out: the next RUNPATH/RPATH directory",
            rel.join("pkg/lib").join(top),
            sys_dep.clone(),
        );
        add(
            "linked directory: the name keeps the link, the kernel resolves `..` from the target",
            dirlink.join("pkg/lib").join(top),
            s(dirlink.join("pkg/lib/../dep/libdep.so")),
        );
        add(
            "relative link to a package directory",
            pkglink.join("pkg/lib").join(top),
            s(pkglink.join("pkg/lib/../dep/libdep.so")),
        );
    }
    // Programs started through a link: `$ORIGIN` is the target's directory.
    for (app, top) in [("app", "libtop_runpath.so"), ("app_rpath", "libtop_rpath.so")] {
        cases.push(Case {
            what: "program started through an absolute link: its real directory",
            entry: abs.join("bin").join(app),
            exec: true,
            key: top,
            want: s(real.join("bin/../pkg/lib").join(top)),
        });
    }
    cases.push(Case {
        what: "program started through a relative link: its real directory",
        entry: rel.join("bin/app"),
        exec: true,
        key: "libtop_runpath.so",
        want: s(real.join("bin/../pkg/lib/libtop_runpath.so")),
    });
    cases.push(Case {
        what: "a farm's own program: a linked library's dependencies from the link's directory",
        entry: here,
        exec: true,
        key: "libdep.so",
        want: s(abs.join("bin/../pkg/lib/../dep/libdep.so")),
    });
    cases
}

/// cudadiag's answer for `entry`, as `inspect` resolves it.
fn cudadiag_list(entry: &Path) -> cudadiag::facts::loader::Resolution {
    let view = inspect::loader_view(entry, inspect::RodataScan::CudaObjects).expect("readable");
    let b = BinaryFacts {
        elf: view.elf,
        ..BinaryFacts::default()
    };
    cudadiag::loader::resolve(&Root::host(), &Env::empty(), entry, &b).expect("an ELF object")
}

#[test]
fn dollar_origin_through_a_symlink_is_the_links_directory_as_ld_so_expands_it() {
    if crate::support::skip::system_ldso().is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // ld.so names files by the paths it builds: a temporary directory reached through a link (macOS-style
    // `/tmp`) would show in them.
    let t = std::fs::canonicalize(tmp.path()).unwrap();
    build_tree(&t);
    let cases = farms(&t);
    let (mut compared, mut keyed, mut differences) = (0usize, 0usize, Vec::new());
    for c in &cases {
        let list = if c.exec {
            glibc_exec_list(&c.entry)
        } else {
            glibc_list(&c.entry, &[])
        }
        .unwrap_or_else(|| panic!("{}: ld.so did not run", c.entry.display()));
        // The scenario itself: glibc's answer is the one the case names, so it tells the readings apart.
        let glibc_key = list.iter().find(|(n, _)| n == c.key).and_then(|(_, p)| p.clone());
        assert_eq!(
            glibc_key.as_deref(),
            Some(c.want.as_str()),
            "{}: {}: ld.so's own answer for {} is not the one the scenario is built for",
            c.what,
            c.entry.display(),
            c.key
        );
        let r = cudadiag_list(&c.entry);
        for (name, want) in &list {
            compared += 1;
            let got = r
                .libraries
                .iter()
                .filter(|l| !l.dlopen)
                .find(|l| &l.soname == name || l.path.as_deref() == Some(name.as_str()))
                .map(|l| l.path.clone());
            if got.as_ref() != Some(want) {
                differences.push(format!(
                    "{} ({}): {name}: ld.so {want:?}, cudadiag {got:?}",
                    c.what,
                    c.entry.display()
                ));
            } else if name == c.key {
                keyed += 1;
            }
        }
    }
    // Floors: every case ran, and each compared its telling library and libc at least.
    assert_eq!(cases.len(), 12, "the farms give twelve cases");
    assert!(compared >= 2 * cases.len(), "only {compared} libraries compared");
    assert!(
        differences.is_empty(),
        "{} of {compared} differ from ld.so:\n{}",
        differences.len(),
        differences.join("\n")
    );
    assert_eq!(keyed, cases.len(), "every case's telling library agreed");
}

//! The aarch64 loader, one scenario per rule (`docs/aarch64-loader.md`): programs and libraries built by
//! Debian's cross compiler inside arm64 roots that hold the real arm64 ld.so and libc, each cross-checked
//! against that ld.so run under `qemu-aarch64` where `qemu-user` is installed.

use crate::support::arm_build::{self as arm, debian_root, ld_cache};
use crate::support::loader_build;

use cudadiag::facts::loader::{How, Library, Resolution, StepResult};
use cudadiag::inspect::{self, InspectOptions};
use cudadiag::loader;
use cudadiag::system::{Env, Root};
use std::path::Path;

/// `FLAG_AARCH64_LIB64 | FLAG_ELF_LIBC6`: what an aarch64 ldconfig writes.
const AARCH64: i32 = 0x0a03;
/// `FLAG_X8664_LIB64 | FLAG_ELF_LIBC6`.
const X86_64: i32 = 0x0303;

fn resolve(root: &Path, main: &Path) -> Resolution {
    let facts = inspect::path(main, &InspectOptions::default()).expect("inspect");
    loader::resolve(&Root::at(root), &Env::empty(), main, &facts[0]).expect("an ELF program")
}

fn first<'a>(r: &'a Resolution, name: &str) -> &'a Library {
    r.libraries
        .iter()
        .find(|l| l.soname == name)
        .unwrap_or_else(|| panic!("{name} was never requested: {:#?}", r.libraries))
}

fn slugs(r: &Resolution) -> Vec<String> {
    cudadiag::rules::loader::evaluate(std::slice::from_ref(r))
        .into_iter()
        .map(|f| f.slug)
        .collect()
}

/// Every library the real aarch64 ld.so lists is resolved to the same path inside the root (or equally not
/// found). Skipped, saying so, without `qemu-aarch64`.
fn agrees_with_glibc(r: &Resolution, root: &Path, main: &Path) {
    let Some(list) = arm::glibc_list(root, main, &[]) else {
        crate::support::skip::required(
            "qemu-aarch64 is not installed (apt-get install qemu-user): no cross-check with glibc",
        );
        return;
    };
    assert!(
        list.iter().any(|(name, _)| name == "libc.so.6"),
        "ld.so did not list libc.so.6 for {}: {list:?}",
        main.display()
    );
    for (name, want) in list {
        let got = r
            .libraries
            .iter()
            .find(|l| l.soname == name)
            .map(|l| l.path.clone());
        assert_eq!(
            got,
            Some(want.clone()),
            "{name}: cudadiag vs glibc's aarch64 ld.so"
        );
    }
}

/// A Debian arm64 root: the default directories are read out of its `ld-linux-aarch64.so.1` (the multiarch
/// ones first), RUNPATH's `$ORIGIN` is the program's directory inside the root, libc comes from
/// `/lib/aarch64-linux-gnu`, and glibc 2.36's legacy subdirectories (`tls`, `aarch64`, `atomics`) are tried
/// in every directory; no glibc-hwcaps ones.
#[test]
fn a_debian_arm64_root_is_searched_as_its_ld_so_does() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    debian_root(root);
    let foo = arm::lib(&root.join("opt/foo"), "libfoo.so.1", "foo", &[]);
    // A copy in the legacy `atomics` subdirectory of the RUNPATH directory wins over the plain one.
    let atomics = arm::lib(&root.join("opt/foo/atomics"), "libfoo.so.1", "foo", &[]);
    let main = arm::exe(
        &root.join("app/main"),
        &["foo"],
        &[&foo],
        &["-Wl,-rpath,$ORIGIN/../opt/foo"],
    );
    let r = resolve(root, &main);
    assert!(r.foreign.is_none(), "{:?}", r.foreign);
    assert_eq!(
        r.system_dirs,
        [
            "/lib/aarch64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/lib",
            "/usr/lib"
        ]
    );
    assert_eq!(r.system_dirs_source, "compiled into /lib/ld-linux-aarch64.so.1");
    assert!(r.hwcaps.is_empty(), "{:?}", r.hwcaps);
    let l = first(&r, "libfoo.so.1");
    assert_eq!(l.how, How::Runpath);
    assert_eq!(l.path.as_deref(), Some("/app/../opt/foo/atomics/libfoo.so.1"));
    assert!(atomics.exists());
    let libc = first(&r, "libc.so.6");
    assert_eq!(libc.how, How::DefaultPath);
    assert_eq!(libc.path.as_deref(), Some("/lib/aarch64-linux-gnu/libc.so.6"));
    assert!(slugs(&r).is_empty(), "{:?}", slugs(&r));
    agrees_with_glibc(&r, root, &main);

    // The same root on a processor without LSE atomics (Cortex-A57): the subdirectory is not tried.
    std::fs::write(
        root.join("proc/cpuinfo"),
        "Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 cpuid\n",
    )
    .unwrap();
    let r = resolve(root, &main);
    assert_eq!(
        first(&r, "libfoo.so.1").path.as_deref(),
        Some("/app/../opt/foo/libfoo.so.1")
    );
}

/// `/etc/ld.so.cache` of an arm64 root: an aarch64 ld.so takes only entries flagged `FLAG_AARCH64_LIB64 |
/// FLAG_ELF_LIBC6` (`_dl_cache_check_flags` compares for equality), never an x86-64 entry nor an unmarked one.
#[test]
fn the_cache_serves_an_aarch64_loader_only_aarch64_entries() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    debian_root(root);
    let bar = arm::lib(&root.join("opt/bar/lib"), "libbar.so.1", "bar", &[]);
    let main = arm::exe(&root.join("app/main"), &["bar"], &[&bar], &[]);
    let cache = |flags: i32| {
        std::fs::create_dir_all(root.join("etc")).unwrap();
        std::fs::write(
            root.join("etc/ld.so.cache"),
            ld_cache(&[
                ("libbar.so.1", "/opt/bar/lib/libbar.so.1", flags),
                ("libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6", AARCH64),
            ]),
        )
        .unwrap();
    };
    for other in [X86_64, 0x0003, 0x0001] {
        cache(other);
        let r = resolve(root, &main);
        assert!(
            r.foreign.is_none(),
            "the aarch64 libc entry makes it an arm64 root"
        );
        let l = first(&r, "libbar.so.1");
        assert_eq!(l.how, How::NotFound, "flags {other:#06x}");
        let step = l.trail.iter().find(|s| s.how == How::LdSoCache).unwrap();
        assert_eq!(step.result, StepResult::NoEntry, "flags {other:#06x}");
        assert!(slugs(&r).contains(&"library-not-found".to_string()));
        agrees_with_glibc(&r, root, &main);
    }
    cache(AARCH64);
    let r = resolve(root, &main);
    let l = first(&r, "libbar.so.1");
    assert_eq!(
        (l.how, l.path.as_deref()),
        (How::LdSoCache, Some("/opt/bar/lib/libbar.so.1"))
    );
    assert_eq!(first(&r, "libc.so.6").how, How::LdSoCache);
    assert!(slugs(&r).is_empty(), "{:?}", slugs(&r));
    agrees_with_glibc(&r, root, &main);
}

/// An x86-64 library in an aarch64 search path is passed over and the search goes on, as glibc's
/// `open_verify` does (`elf_machine_matches_host`): in a RUNPATH directory, and behind a cache entry (an
/// aarch64 ldconfig flags every 64-bit ELF file as aarch64's, whatever its machine).
#[test]
fn an_x86_64_library_in_the_way_is_skipped() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    debian_root(root);
    let foo = arm::lib(&root.join("opt/foo"), "libfoo.so.1", "foo", &[]);
    loader_build::lib(&root.join("opt/x86"), "libfoo.so.1", "foo", &[], &[]);
    let main = arm::exe(
        &root.join("app/main"),
        &["foo"],
        &[&foo],
        &["-Wl,-rpath,/opt/x86:/opt/foo"],
    );
    let r = resolve(root, &main);
    let l = first(&r, "libfoo.so.1");
    assert_eq!(
        (l.how, l.path.as_deref()),
        (How::Runpath, Some("/opt/foo/libfoo.so.1"))
    );
    let skipped = l
        .trail
        .iter()
        .find(|s| s.result == StepResult::WrongMachine)
        .expect("a skipped step");
    assert_eq!(skipped.path.as_deref(), Some("/opt/x86/libfoo.so.1"));
    assert_eq!(skipped.note.as_deref(), Some("built for x86_64: skipped"));
    agrees_with_glibc(&r, root, &main);

    // Behind the cache: an x86-64 libbar the cache names is skipped, the default directories still searched.
    let bar = arm::lib(&root.join("usr/lib/aarch64-linux-gnu"), "libbar.so.1", "bar", &[]);
    loader_build::lib(&root.join("opt/x86"), "libbar.so.1", "bar", &[], &[]);
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::fs::write(
        root.join("etc/ld.so.cache"),
        ld_cache(&[("libbar.so.1", "/opt/x86/libbar.so.1", AARCH64)]),
    )
    .unwrap();
    let main = arm::exe(&root.join("app2/main"), &["bar"], &[&bar], &[]);
    let r = resolve(root, &main);
    let l = first(&r, "libbar.so.1");
    let cached = l.trail.iter().find(|s| s.how == How::LdSoCache).unwrap();
    assert_eq!(cached.result, StepResult::WrongMachine);
    assert_eq!(
        (l.how, l.path.as_deref()),
        (How::DefaultPath, Some("/usr/lib/aarch64-linux-gnu/libbar.so.1"))
    );
    agrees_with_glibc(&r, root, &main);
}

/// A missing library in an arm64 root is `library-not-found`, its trail the aarch64 search (RUNPATH, the
/// cache, the multiarch and plain default directories), and an x86-64 copy of it elsewhere in the root is
/// named as unusable, never offered as the fix.
#[test]
fn a_missing_library_shows_the_aarch64_search() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    debian_root(root);
    let gone = arm::lib(&t.path().join("build"), "libgone.so.2", "gone", &[]);
    let main = arm::exe(
        &root.join("app/main"),
        &["gone"],
        &[&gone],
        &["-Wl,-rpath,$ORIGIN/lib"],
    );
    std::fs::remove_file(&gone).unwrap();
    loader_build::lib(&root.join("opt/x86"), "libgone.so.2", "gone", &[], &[]);
    let r = resolve(root, &main);
    let l = first(&r, "libgone.so.2");
    assert_eq!(l.how, How::NotFound);
    let dirs: Vec<&str> = l.trail.iter().filter_map(|s| s.dir.as_deref()).collect();
    assert_eq!(
        dirs,
        [
            "/app/lib",
            "/lib/aarch64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/lib",
            "/usr/lib"
        ]
    );
    let copy = l
        .copies
        .iter()
        .find(|c| c.same_name)
        .expect("the x86-64 copy is listed");
    assert_eq!(copy.path, "/opt/x86/libgone.so.2");
    assert_eq!(copy.unusable.as_deref(), Some("wrong machine: x86_64"));
    assert_eq!(slugs(&r), ["library-not-found"]);
    let fix = cudadiag::rules::not_found::fix_for_missing(l);
    assert!(!fix.contains("LD_LIBRARY_PATH=/opt/x86"), "{fix}");
    agrees_with_glibc(&r, root, &main);
}

/// Near miss: the same aarch64 program in a root of another architecture (an x86-64 cache, no aarch64
/// loader) is not searched there: one `foreign-architecture` note, no missing library.
#[test]
fn an_x86_64_root_does_not_judge_an_aarch64_tree() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("x86root");
    let foo = arm::lib(&t.path().join("build"), "libfoo.so.1", "foo", &[]);
    let main = arm::exe(&t.path().join("app/main"), &["foo"], &[&foo], &[]);
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::fs::write(
        root.join("etc/ld.so.cache"),
        ld_cache(&[("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6", X86_64)]),
    )
    .unwrap();
    let r = resolve(&root, &main);
    let f = r.foreign.as_ref().expect("foreign");
    assert_eq!((f.needs.as_str(), f.here.as_deref()), ("aarch64", Some("x86_64")));
    assert!(r.libraries.is_empty());
    assert_eq!(slugs(&r), ["foreign-architecture"]);
}

/// A Fedora-style arm64 root whose interpreter cannot be read (here: absent; its aarch64 cache makes it an
/// arm64 root): glibc's upstream aarch64 default directories, `/lib64` then `/usr/lib64`
/// (`LIBC_SLIBDIR_RTLDDIR([lib64], [lib])`), and the trail says where they came from.
#[test]
fn an_unreadable_interpreter_falls_back_to_upstream_lib64() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    std::fs::create_dir_all(root.join("usr/lib64")).unwrap();
    std::fs::copy(
        Path::new(arm::CROSS_LIB).join("libc.so.6"),
        root.join("usr/lib64/libc.so.6"),
    )
    .unwrap();
    let foo = arm::lib(&root.join("opt/foo"), "libfoo.so.1", "foo", &[]);
    let main = arm::exe(&root.join("app/main"), &["foo"], &[&foo], &[]);
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::fs::write(
        root.join("etc/ld.so.cache"),
        ld_cache(&[("libfoo.so.1", "/opt/foo/libfoo.so.1", AARCH64)]),
    )
    .unwrap();
    let r = resolve(root, &main);
    assert!(r.foreign.is_none(), "{:?}", r.foreign);
    assert_eq!(r.system_dirs, ["/lib64", "/usr/lib64"]);
    assert!(
        r.system_dirs_source.contains("upstream default"),
        "{}",
        r.system_dirs_source
    );
    assert_eq!(first(&r, "libfoo.so.1").how, How::LdSoCache);
    let libc = first(&r, "libc.so.6");
    assert_eq!(
        (libc.how, libc.path.as_deref()),
        (How::DefaultPath, Some("/usr/lib64/libc.so.6"))
    );
}

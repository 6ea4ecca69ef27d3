//! One scenario per loader rule, each with tiny ELF files built by `cc` in a temporary directory, and each
//! cross-checked against glibc's own `ld.so --list` where the machine has one.

use crate::support::loader_build as build;

use build::{exe, glibc_list, lib};
use cudadiag::facts::loader::{How, Library, Resolution, StepResult};
use cudadiag::inspect::{self, InspectOptions};
use cudadiag::loader::{self};
use cudadiag::system::{Env, Root};
use std::path::Path;

fn resolve_with(root: &Root, path: &Path, env: &[(&str, &str)]) -> Resolution {
    let facts = inspect::path(path, &InspectOptions::default()).expect("inspect");
    let mut e = Env::empty();
    for (k, v) in env {
        e.set(k, v);
    }
    loader::resolve(root, &e, path, &facts[0]).expect("an ELF program")
}

fn resolve(path: &Path, env: &[(&str, &str)]) -> Resolution {
    resolve_with(&Root::host(), path, env)
}

/// The first request of `name` (the one that loaded it, or failed).
fn first<'a>(r: &'a Resolution, name: &str) -> &'a Library {
    r.libraries
        .iter()
        .find(|l| l.soname == name)
        .unwrap_or_else(|| panic!("{name} was never requested"))
}

/// Every library glibc lists is resolved to the same path (or equally not found).
fn agrees_with_glibc(r: &Resolution, path: &Path, env: &[(&str, &str)]) {
    let Some(list) = glibc_list(path, env) else {
        if crate::support::skip::system_ldso().is_some() {
            crate::support::skip::required(&format!("ld.so could not be run on {}", path.display()));
        }
        return;
    };
    assert!(!list.is_empty(), "ld.so printed nothing for {}", path.display());
    for (name, want) in list {
        let got = r
            .libraries
            .iter()
            .find(|l| l.soname == name || l.path.as_deref() == Some(name.as_str()))
            .map(|l| l.path.clone());
        assert_eq!(
            got,
            Some(want.clone()),
            "{name}: cudadiag vs glibc (want {want:?})"
        );
    }
}

fn slugs(r: &Resolution) -> Vec<String> {
    cudadiag::rules::loader::evaluate(std::slice::from_ref(r))
        .into_iter()
        .map(|f| f.slug)
        .collect()
}

#[test]
fn rpath_before_ld_library_path_before_runpath() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let a = lib(&d.join("a"), "libdep.so.1", "dep", &[], &[]);
    lib(&d.join("b"), "libdep.so.1", "dep", &[], &[]);
    lib(&d.join("c"), "libdep.so.1", "dep", &[], &[]);
    let b = d.join("b").to_string_lossy().into_owned();
    let rpath = format!("-Wl,-rpath,{}", d.join("a").display());
    let runpath = format!("-Wl,-rpath,{}", d.join("c").display());
    let with_rpath = exe(&d.join("bin/rp"), &[&a], &["-Wl,--disable-new-dtags", &rpath]);
    let with_runpath = exe(&d.join("bin/run"), &[&a], &["-Wl,--enable-new-dtags", &runpath]);
    let env = [("LD_LIBRARY_PATH", b.as_str())];

    let r = resolve(&with_rpath, &env);
    let l = first(&r, "libdep.so.1");
    assert_eq!(l.how, How::Rpath);
    assert_eq!(
        l.path.as_deref(),
        Some(&*d.join("a/libdep.so.1").to_string_lossy())
    );
    agrees_with_glibc(&r, &with_rpath, &env);

    let r = resolve(&with_runpath, &env);
    let l = first(&r, "libdep.so.1");
    assert_eq!(l.how, How::LdLibraryPath);
    assert_eq!(
        l.path.as_deref(),
        Some(&*d.join("b/libdep.so.1").to_string_lossy())
    );
    assert_eq!(l.intended.as_ref().map(|i| i.how), Some(How::Runpath));
    assert!(slugs(&r).contains(&"library-shadowed".to_string()));
    agrees_with_glibc(&r, &with_runpath, &env);

    // Near miss: without LD_LIBRARY_PATH the runpath copy is the one loaded, nothing is shadowed.
    let r = resolve(&with_runpath, &[]);
    let l = first(&r, "libdep.so.1");
    assert_eq!(l.how, How::Runpath);
    assert_eq!(
        l.path.as_deref(),
        Some(&*d.join("c/libdep.so.1").to_string_lossy())
    );
    assert!(!slugs(&r).contains(&"library-shadowed".to_string()));
    agrees_with_glibc(&r, &with_runpath, &[]);
}

#[test]
fn runpath_is_not_inherited_and_the_trail_says_so() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("lib");
    let leaf = lib(&d, "libleaf.so.1", "leaf", &[], &[]);
    let mid = lib(&d, "libmid.so.1", "mid", &[&leaf], &[]);
    // Another version of the leaf, where nothing searches: the fix names it.
    lib(&d, "libleaf.so.2", "leaf", &[], &[]);
    let flag = format!("-Wl,-rpath,{}", d.display());
    let main = exe(
        &t.path().join("main"),
        &[&mid],
        &["-Wl,--enable-new-dtags", &flag],
    );
    std::fs::remove_file(&leaf).unwrap();

    let r = resolve(&main, &[]);
    assert_eq!(first(&r, "libmid.so.1").how, How::Runpath);
    let l = first(&r, "libleaf.so.1");
    assert_eq!(l.how, How::NotFound);
    assert!(l.path.is_none());
    // libmid has no RUNPATH of its own; the main program's is not searched for it.
    assert!(l.trail.iter().all(|s| s.how != How::Runpath));
    assert!(l.trail.iter().any(|s| s.how == How::LdSoCache));
    assert!(
        l.trail
            .iter()
            .any(|s| s.how == How::DefaultPath && s.result == StepResult::NotPresent)
    );
    assert!(
        l.copies
            .iter()
            .any(|c| c.path.ends_with("libleaf.so.2") && !c.same_name)
    );
    let findings = cudadiag::rules::loader::evaluate(std::slice::from_ref(&r));
    let f = findings
        .iter()
        .find(|f| f.slug == "library-not-found")
        .expect("library-not-found");
    assert!(f.evidence.iter().any(|e| e.contains("[ld.so.cache]")));
    assert!(f.help.contains("libleaf.so.2"), "{}", f.help);
    agrees_with_glibc(&r, &main, &[]);
}

#[test]
fn rpath_is_inherited() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("lib");
    let leaf = lib(&d, "libleaf.so.1", "leaf", &[], &[]);
    let mid = lib(&d, "libmid.so.1", "mid", &[&leaf], &[]);
    let flag = format!("-Wl,-rpath,{}", d.display());
    let main = exe(
        &t.path().join("main"),
        &[&mid],
        &["-Wl,--disable-new-dtags", &flag],
    );
    let r = resolve(&main, &[]);
    let l = first(&r, "libleaf.so.1");
    assert_eq!(l.how, How::Rpath);
    assert_eq!(l.via.as_deref(), Some(&*main.to_string_lossy()));
    assert_eq!(l.needed_by, d.join("libmid.so.1").to_string_lossy());
    // A near miss for library-not-found.
    assert!(!slugs(&r).contains(&"library-not-found".to_string()));
    agrees_with_glibc(&r, &main, &[]);
}

#[test]
fn origin_is_the_directory_the_object_was_found_in() {
    let t = tempfile::tempdir().unwrap();
    let real = t.path().join("real/lib");
    let dep = lib(&real.join("dep"), "libdep.so.1", "dep", &[], &[]);
    let mid = lib(
        &real,
        "libmid.so.1",
        "mid",
        &[&dep],
        &["-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/dep"],
    );
    std::os::unix::fs::symlink(&real, t.path().join("link")).unwrap();
    let main = exe(&t.path().join("main"), &[&mid], &[]);
    let llp = t.path().join("link").to_string_lossy().into_owned();
    let env = [("LD_LIBRARY_PATH", llp.as_str())];
    let r = resolve(&main, &env);
    let l = first(&r, "libdep.so.1");
    assert_eq!(l.how, How::Runpath);
    // $ORIGIN is the symlinked directory libmid was found in, not its realpath.
    assert_eq!(
        l.path.as_deref(),
        Some(&*t.path().join("link/dep/libdep.so.1").to_string_lossy())
    );
    agrees_with_glibc(&r, &main, &env);
}

#[test]
fn nodeflib_skips_the_cache_and_default_directories() {
    if !Path::new("/etc/ld.so.cache").exists() {
        crate::support::skip::optional("no /etc/ld.so.cache on this machine");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let main = exe(&t.path().join("main"), &[], &["-lm", "-Wl,-z,nodefaultlib"]);
    let plain = exe(&t.path().join("plain"), &[], &["-lm"]);
    let r = resolve(&main, &[]);
    let l = first(&r, "libm.so.6");
    assert_eq!(l.how, How::NotFound);
    assert!(
        l.trail
            .iter()
            .any(|s| s.how == How::DefaultPath && s.result == StepResult::Skipped)
    );
    agrees_with_glibc(&r, &main, &[]);
    // Near miss: the same program without DF_1_NODEFLIB finds it.
    let r = resolve(&plain, &[]);
    assert_ne!(first(&r, "libm.so.6").how, How::NotFound);
    agrees_with_glibc(&r, &plain, &[]);
}

/// glibc 2.26–2.36 tries legacy hwcap subdirectories (`tls/`, `x86_64/`, the platform's) of every search
/// directory before the directory itself; later versions do not. Whichever this machine's glibc is, cudadiag
/// picks the copy it picks.
#[test]
fn legacy_hwcap_subdirectories_as_this_glibc_tries_them() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("l");
    let plain = lib(&dir, "libdep.so.1", "dep", &[], &[]);
    let platform = loader::platform::Platform::detect(&Root::host(), 62, true, None);
    for sub in ["x86_64", "tls", platform.platform.as_str()] {
        lib(&dir.join(sub), "libdep.so.1", "dep", &[], &[]);
    }
    let main = exe(&t.path().join("main"), &[&plain], &[]);
    let llp = dir.to_string_lossy().into_owned();
    let env = [("LD_LIBRARY_PATH", llp.as_str())];
    let r = resolve(&main, &env);
    let got = first(&r, "libdep.so.1").path.clone().unwrap();
    let expected = match platform.legacy_subdirs.first() {
        Some(_) => format!("{llp}/tls/libdep.so.1"),
        None => format!("{llp}/libdep.so.1"),
    };
    assert_eq!(got, expected);
    agrees_with_glibc(&r, &main, &env);
}

#[test]
fn a_candidate_of_the_wrong_class_is_skipped() {
    let t = tempfile::tempdir().unwrap();
    let good = lib(&t.path().join("b"), "libdep.so.1", "dep", &[], &[]);
    let bad_dir = t.path().join("a");
    std::fs::create_dir_all(&bad_dir).unwrap();
    let bad = bad_dir.join("libdep.so.1");
    let src = build::source(t.path(), "f32", "int dep(void) { return 1; }\n");
    let built = std::process::Command::new("cc")
        .args(["-m32", "-shared", "-nostdlib", "-fPIC", "-o"])
        .arg(&bad)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        // No 32-bit toolchain: the same library with its class byte changed is what ld.so's header check sees.
        let mut bytes = std::fs::read(&good).unwrap();
        bytes[4] = 1;
        std::fs::write(&bad, bytes).unwrap();
    }
    let main = exe(&t.path().join("main"), &[&good], &[]);
    let llp = format!("{}:{}", bad_dir.display(), t.path().join("b").display());
    let env = [("LD_LIBRARY_PATH", llp.as_str())];
    let r = resolve(&main, &env);
    let l = first(&r, "libdep.so.1");
    assert_eq!(l.path.as_deref(), Some(&*good.to_string_lossy()));
    assert!(l.trail.iter().any(|s| s.result == StepResult::WrongClass));
    agrees_with_glibc(&r, &main, &env);
}

#[test]
fn a_soname_already_loaded_satisfies_later_requests() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let a1 = lib(&d.join("first"), "libshared.so.1", "s", &[], &[]);
    let a2 = lib(&d.join("own"), "libshared.so.1", "s", &[], &[]);
    let own = format!("-Wl,-rpath,{}", d.join("own").display());
    let user = lib(
        &d.join("u"),
        "libuser.so.1",
        "u",
        &[&a2],
        &["-Wl,--enable-new-dtags", &own],
    );
    let first_dir = format!(
        "-Wl,-rpath,{}:{}",
        d.join("first").display(),
        d.join("u").display()
    );
    let main = exe(
        &d.join("main"),
        &[&a1, &user],
        &["-Wl,--enable-new-dtags", &first_dir],
    );
    let r = resolve(&main, &[]);
    let edge = r
        .libraries
        .iter()
        .find(|l| l.soname == "libshared.so.1" && l.needed_by.ends_with("libuser.so.1"))
        .expect("libuser's request");
    assert_eq!(edge.how, How::AlreadyLoaded);
    assert_eq!(edge.path.as_deref(), Some(&*a1.to_string_lossy()));
    assert!(slugs(&r).contains(&"library-shadowed".to_string()));
    agrees_with_glibc(&r, &main, &[]);
}

#[test]
fn a_versioned_symbol_missing_from_the_provider() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let new_map = build::source(
        d,
        "new.map",
        "V_1 { global: foo; local: *; };\nV_2 { global: bar; } V_1;\n",
    );
    let old_map = build::source(
        d,
        "old.map",
        "V_1 { global: foo; local: *; };\nV_2 { global: baz; } V_1;\n",
    );
    let new_src = build::source(d, "new", "int foo(void){return 1;}\nint bar(void){return 2;}\n");
    let old_src = build::source(d, "old", "int foo(void){return 1;}\nint baz(void){return 2;}\n");
    std::fs::create_dir_all(d.join("new")).unwrap();
    std::fs::create_dir_all(d.join("old")).unwrap();
    for (dir, src, map) in [("new", &new_src, &new_map), ("old", &old_src, &old_map)] {
        let out = d.join(dir).join("libv.so.1");
        build::cc(&[
            "-shared",
            "-fPIC",
            "-o",
            &out.to_string_lossy(),
            &src.to_string_lossy(),
            "-Wl,-soname,libv.so.1",
            &format!("-Wl,--version-script={}", map.display()),
        ]);
    }
    let consumer_src = build::source(d, "consumer", "int bar(void);\nint use(void){return bar();}\n");
    let consumer = d.join("libconsumer.so.1");
    build::cc(&[
        "-shared",
        "-fPIC",
        "-o",
        &consumer.to_string_lossy(),
        &consumer_src.to_string_lossy(),
        "-Wl,-soname,libconsumer.so.1",
        &d.join("new/libv.so.1").to_string_lossy(),
    ]);
    let link = format!("-Wl,-rpath-link,{}", d.join("new").display());
    let main = exe(&d.join("main"), &[&consumer], &[&link]);
    let run = |dir: &str| {
        let llp = format!("{}:{}", d.join(dir).display(), d.display());
        resolve(&main, &[("LD_LIBRARY_PATH", llp.as_str())])
    };
    let r = run("old");
    let findings = cudadiag::rules::loader::evaluate(std::slice::from_ref(&r));
    let f = findings
        .iter()
        .find(|f| f.slug == "symbol-version-missing")
        .expect("symbol-version-missing");
    assert!(
        f.message.contains("undefined symbol: bar, version V_2"),
        "{}",
        f.message
    );
    // Near miss: the provider it was built against.
    assert!(!slugs(&run("new")).contains(&"symbol-version-missing".to_string()));
    // One `Files` for several resolutions remembers each consumer's checks by the providers in scope: the
    // answer against the old provider is not carried over to the new one, nor the other way round.
    let facts = inspect::path(&main, &InspectOptions::default()).expect("inspect");
    let mut shared = loader::Files::with_threads(2);
    for dir in ["old", "new", "old", "new"] {
        let mut e = Env::empty();
        e.set(
            "LD_LIBRARY_PATH",
            &format!("{}:{}", d.join(dir).display(), d.display()),
        );
        let again = loader::resolve_with(&Root::host(), &e, &main, &facts[0], &mut shared);
        assert_eq!(again.as_ref(), Some(&run(dir)), "{dir}");
    }
}

#[test]
fn a_fake_root_is_read_inside_the_root() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    // Default directories come from glibc's upstream default when the root has no interpreter.
    let foo = lib(&root.join("usr/lib64"), "libfoo.so.1", "foo", &[], &[]);
    let bar = lib(&root.join("opt/bar/lib"), "libbar.so.1", "bar", &[], &[]);
    let main = exe(&root.join("app/main"), &[&foo, &bar], &[]);
    std::fs::create_dir_all(root.join("etc")).unwrap();
    let cache = build_cache(&[("libbar.so.1", "/opt/bar/lib/libbar.so.1")]);
    std::fs::write(root.join("etc/ld.so.cache"), cache).unwrap();
    let r = resolve_with(&Root::at(root), &main, &[]);
    assert_eq!(r.objects[0].realpath, "/app/main");
    let foo = first(&r, "libfoo.so.1");
    assert_eq!(
        (foo.how, foo.path.as_deref()),
        (How::DefaultPath, Some("/usr/lib64/libfoo.so.1"))
    );
    let bar = first(&r, "libbar.so.1");
    assert_eq!(
        (bar.how, bar.path.as_deref()),
        (How::LdSoCache, Some("/opt/bar/lib/libbar.so.1"))
    );
    // The host's libc is not in the root: nothing leaks in from outside it.
    assert_eq!(first(&r, "libc.so.6").how, How::NotFound);
}

/// A library in a directory only /etc/ld.so.conf lists is found through the cache alone: with no cache, or one
/// older than the library, it is missing, and the fix is `ldconfig`, not LD_LIBRARY_PATH. A copy of the
/// other ELF class is listed but never offered as the answer.
#[test]
fn a_directory_only_ld_so_conf_lists_needs_the_cache() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let bar = lib(&root.join("opt/bar/lib"), "libbar.so.1", "bar", &[], &[]);
    let main = exe(&root.join("app/main"), &[&bar], &[]);
    std::fs::create_dir_all(root.join("etc/ld.so.conf.d")).unwrap();
    std::fs::write(root.join("etc/ld.so.conf"), "include /etc/ld.so.conf.d/*.conf\n").unwrap();
    std::fs::write(root.join("etc/ld.so.conf.d/bar.conf"), "/opt/bar/lib\n").unwrap();
    let fix = |r: &Resolution| cudadiag::rules::not_found::fix_for_missing(first(r, "libbar.so.1"));

    // No cache: the cache step is skipped, and the directory is never searched.
    let r = resolve_with(&Root::at(root), &main, &[]);
    let l = first(&r, "libbar.so.1");
    assert_eq!(l.how, How::NotFound);
    let copy = l.copies.iter().find(|c| c.same_name).expect("the copy on disk");
    assert!(copy.in_ld_so_conf && copy.unusable.is_none(), "{copy:?}");
    assert!(
        fix(&r).contains("there is no usable /etc/ld.so.cache"),
        "{}",
        fix(&r)
    );
    assert!(fix(&r).contains("sudo ldconfig"), "{}", fix(&r));

    // A cache written before the library: no entry for it.
    let stale = build_cache(&[("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6")]);
    std::fs::write(root.join("etc/ld.so.cache"), stale).unwrap();
    let r = resolve_with(&Root::at(root), &main, &[]);
    assert_eq!(first(&r, "libbar.so.1").how, How::NotFound);
    assert!(
        fix(&r).contains("/etc/ld.so.cache has no entry for it"),
        "{}",
        fix(&r)
    );

    // After ldconfig: found through the cache.
    let fresh = build_cache(&[("libbar.so.1", "/opt/bar/lib/libbar.so.1")]);
    std::fs::write(root.join("etc/ld.so.cache"), fresh).unwrap();
    let r = resolve_with(&Root::at(root), &main, &[]);
    assert_eq!(first(&r, "libbar.so.1").how, How::LdSoCache);

    // Only a copy of the other class left on disk: named, with why it cannot be loaded.
    std::fs::remove_file(root.join("etc/ld.so.cache")).unwrap();
    let mut bytes = std::fs::read(&bar).unwrap();
    bytes[4] = 1;
    std::fs::write(&bar, bytes).unwrap();
    let r = resolve_with(&Root::at(root), &main, &[]);
    let l = first(&r, "libbar.so.1");
    let copy = l.copies.iter().find(|c| c.same_name).expect("the copy on disk");
    assert_eq!(copy.unusable.as_deref(), Some("wrong ELF class: ELFCLASS32"));
    assert!(
        fix(&r).contains("can load is on this machine (/opt/bar/lib/libbar.so.1: wrong ELF class"),
        "{}",
        fix(&r)
    );
    assert!(!fix(&r).contains("LD_LIBRARY_PATH"), "{}", fix(&r));
}

/// A new-format (`glibc-ld.so.cache1.1`) cache with `entries` for x86-64, sorted as ldconfig sorts them.
fn build_cache(entries: &[(&str, &str)]) -> Vec<u8> {
    // Flags 0x0303: FLAG_X8664_LIB64 | FLAG_ELF_LIBC6.
    let x86_64: Vec<(&str, &str, i32)> = entries.iter().map(|&(k, v)| (k, v, 0x0303)).collect();
    crate::support::arm_build::ld_cache(&x86_64)
}

#[test]
fn cuda_libraries_loaded_with_dlopen_are_resolved_from_their_caller() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    // A stand-in driver library reachable only through the runtime's own RUNPATH.
    lib(&d.join("driver"), "libcuda.so.1", "cuInit", &[], &[]);
    let runpath = format!("-Wl,-rpath,{}", d.join("driver").display());
    let cudart = lib(
        &d.join("rt"),
        "libcudart.so.12",
        "cudaMalloc",
        &[],
        &["-Wl,--enable-new-dtags", &runpath],
    );
    // A library of the CUDA stack (it needs the runtime) that names NVML in its read-only data, as frameworks
    // do before dlopen-ing it; and one outside the stack that names it too, which is not searched.
    let src = build::source(
        d,
        "nvml-user",
        "const char *nvml = \"libnvidia-ml.so.1\";\nconst char *f(void) { return nvml; }\n",
    );
    let user = d.join("rt/libuser.so.1");
    build::cc(&[
        "-shared",
        "-fPIC",
        "-o",
        &user.to_string_lossy(),
        &src.to_string_lossy(),
        "-Wl,-soname,libuser.so.1",
        "-Wl,--no-as-needed",
        &cudart.to_string_lossy(),
    ]);
    let src = build::source(
        d,
        "other",
        "const char *name = \"libnvidia-ml.so.1\";\nconst char *g(void) { return name; }\n",
    );
    let other = d.join("rt/libother.so.1");
    build::cc(&[
        "-shared",
        "-fPIC",
        "-o",
        &other.to_string_lossy(),
        &src.to_string_lossy(),
        "-Wl,-soname,libother.so.1",
    ]);
    let main = exe(
        &d.join("main"),
        &[&cudart, &user, &other],
        &[&format!("-Wl,-rpath,{}", d.join("rt").display())],
    );
    let r = resolve(&main, &[]);
    // With workers to spare, the libraries are read ahead and their searches start then, not when the walk
    // reaches them: the same answer.
    let facts = inspect::path(&main, &InspectOptions::default()).expect("inspect");
    let ahead = loader::resolve_with(
        &Root::host(),
        &Env::empty(),
        &main,
        &facts[0],
        &mut loader::Files::with_threads(4),
    );
    assert_eq!(ahead.as_ref(), Some(&r));
    // One `Files` for two resolutions (a framework's import, then the tree of one of its files): the second
    // takes the first's reads of each library, its `dlopen` names too, and gives the same answer.
    let mut shared = loader::Files::with_threads(2);
    for _ in 0..2 {
        let again = loader::resolve_with(&Root::host(), &Env::empty(), &main, &facts[0], &mut shared);
        assert_eq!(again.as_ref(), Some(&r));
    }
    let cuda = first(&r, "libcuda.so.1");
    assert!(cuda.dlopen);
    assert_eq!(cuda.needed_by, d.join("rt/libcudart.so.12").to_string_lossy());
    assert_eq!(
        (cuda.how, cuda.path.as_deref()),
        (
            How::Runpath,
            Some(&*d.join("driver/libcuda.so.1").to_string_lossy())
        )
    );
    let nvml = first(&r, "libnvidia-ml.so.1");
    assert!(nvml.dlopen);
    assert!(nvml.reason.as_deref().is_some_and(|w| w.contains(".rodata")));
    assert_eq!(nvml.needed_by, user.to_string_lossy());
    assert!(
        r.libraries.iter().all(|l| l.needed_by != other.to_string_lossy()),
        "a library outside the CUDA stack is not searched for dlopen names"
    );
    // Near miss: a library that names nothing loads nothing at run time.
    assert!(
        r.libraries
            .iter()
            .filter(|l| l.dlopen)
            .all(|l| l.needed_by != main.to_string_lossy())
    );
    // The missing NVML is a warning, not an error: the program may run without it.
    let findings = cudadiag::rules::loader::evaluate(std::slice::from_ref(&r));
    let f = findings
        .iter()
        .find(|f| f.message.contains("libnvidia-ml.so.1"))
        .expect("finding for NVML");
    assert_eq!(f.severity, cudadiag::findings::Severity::Warning);
}

#[test]
fn dlopen_stems_cudnn_completes_its_own_and_others_list_their_versions() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let cudnn = d.join("cudnn");
    // cuDNN 9 names its sub-libraries as stems (`libcudnn_ops.so`) and adds its own version before it calls
    // dlopen (glibc's LD_DEBUG=libs shows `libcudnn_ops.so.9.19.0`, `.9.19`, `.9` asked for, never the stem).
    // A bare `libcudnn_ops.so` earlier on the search (a -dev package's link, here on LD_LIBRARY_PATH) is not
    // what it loads. Other libraries' stems: one version along the search, two, or none.
    let dep = lib(&cudnn, "libopsdep.so.1", "opsdep", &[], &[]);
    let runpath = ["-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN"];
    lib(&cudnn, "libcudnn_ops.so.9", "ops", &[&dep], &runpath);
    lib(&d.join("dev"), "libcudnn_ops.so", "devops", &[], &[]);
    lib(&cudnn, "libcudnn_two.so.8", "two8", &[], &[]);
    lib(&cudnn, "libcudnn_two.so.9", "two9", &[], &[]);
    lib(&cudnn, "libcupti.so.13", "cupti13", &[], &[]);
    lib(&cudnn, "libnvJitLink.so.12", "jit12", &[], &[]);
    lib(&cudnn, "libnvJitLink.so.13", "jit13", &[], &[]);
    lib(&d.join("elsewhere"), "libnvrtc.so.9", "nvrtc9", &[], &[]);
    let main_lib = build::lib_from(
        &cudnn,
        "libcudnn.so.9",
        "const char *subs[] = {\"libcudnn_ops.so\", \"libcudnn_two.so\", \"libcupti.so\", \
         \"libnvJitLink.so\", \"libnvrtc.so\"};\nconst char *f(int i) { return subs[i]; }\n",
        &[],
        &runpath,
    );
    let main = exe(
        &d.join("bin/app"),
        &[&main_lib],
        &[&format!("-Wl,-rpath,{}", cudnn.display())],
    );
    let dev = d.join("dev").to_string_lossy().into_owned();
    let r = resolve(&main, &[("LD_LIBRARY_PATH", &dev)]);
    let at = |n: &str| cudnn.join(n).to_string_lossy().into_owned();

    // Its own sub-libraries: the name with its own version, resolved from the caller (its RUNPATH), with its
    // dependencies; the bare stem is never requested, so the -dev link is not loaded.
    let ops = first(&r, "libcudnn_ops.so.9");
    assert!(ops.dlopen && ops.reason.as_deref().is_some_and(|w| w.contains("own version")));
    assert_eq!(
        (ops.how, ops.path.clone()),
        (How::Runpath, Some(at("libcudnn_ops.so.9")))
    );
    assert_eq!(ops.needed_by, at("libcudnn.so.9"));
    assert_eq!(first(&r, "libopsdep.so.1").path, Some(at("libopsdep.so.1")));
    assert!(r.libraries.iter().all(|l| l.soname != "libcudnn_ops.so"));
    assert_eq!(first(&r, "libcudnn_two.so.9").path, Some(at("libcudnn_two.so.9")));
    assert!(r.libraries.iter().all(|l| l.soname != "libcudnn_two.so.8"));

    // Another library's stem, one version along the search: listed, not loaded (the library may add a
    // version or fail on the bare name); the fix says how to give it the bare name.
    let cupti = first(&r, "libcupti.so");
    assert_eq!((cupti.how, cupti.dlopen), (How::NotFound, true));
    assert_eq!(cupti.completions, ["libcupti.so.13"]);
    assert!(r.libraries.iter().all(|l| l.soname != "libcupti.so.13"));
    let fix = cudadiag::rules::not_found::fix_for_missing(cupti);
    assert!(fix.contains("ln -s libcupti.so.13 libcupti.so"), "{fix}");

    // Two versions: both listed in search order, neither loaded (the library's code picks one).
    let jit = first(&r, "libnvJitLink.so");
    assert_eq!(jit.completions, ["libnvJitLink.so.12", "libnvJitLink.so.13"]);
    assert!(
        r.libraries
            .iter()
            .all(|l| !l.soname.starts_with("libnvJitLink.so."))
    );

    // None along the search: no completion, no error, and the fix says so without sending the user to
    // install a library that is only ever loaded on demand.
    let none = first(&r, "libnvrtc.so");
    assert!(none.completions.is_empty());
    let fix = cudadiag::rules::not_found::fix_for_missing(none);
    assert!(
        fix.contains("only on demand") && fix.contains("if the program uses it"),
        "{fix}"
    );
    assert!(slugs(&r).is_empty(), "stems are no failures: {:?}", slugs(&r));

    // The tree shows each stem once with what completes it, and the completion as a load of its own.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cudadiag"))
        .args([
            "inspect",
            "-v",
            "--no-device-code",
            "--no-host",
            "--color",
            "never",
            "--clear-env",
        ])
        .args(["--env", &format!("LD_LIBRARY_PATH={dev}")])
        .arg(&main)
        .output()
        .expect("run cudadiag");
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(
        tree.contains(
            "libcupti.so [dlopen stem] no file of this bare name; versioned along its search: libcupti.so.13"
        ),
        "{tree}"
    );
    assert!(
        tree.contains(&format!(
            "libcudnn_ops.so.9 [dlopen, runpath] {}",
            at("libcudnn_ops.so.9")
        )),
        "{tree}"
    );
    assert!(tree.contains("libnvJitLink.so.12, libnvJitLink.so.13"), "{tree}");
    assert!(tree.contains("libnvrtc.so [dlopen] not found"), "{tree}");
}

/// What a real `dlopen` maps, against the tree: a library in the shape of cuDNN 9 loads its sub-library by
/// completing the stem in its `.rodata` with its own version, and NVML by name; each load follows the caller's
/// RUNPATH, not the program's (RUNPATH is not inherited), and a bare `-dev` link on LD_LIBRARY_PATH is never
/// asked for. The program prints what `/proc/self/maps` holds after the loads.
#[test]
fn a_real_dlopen_maps_what_the_tree_says() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let cudnn = d.join("cudnn");
    lib(&cudnn, "libcudnn_ops.so.9", "ops", &[], &[]);
    lib(&d.join("drv"), "libnvidia-ml.so.1", "nvml", &[], &[]);
    // Decoys: the program's RUNPATH has its own NVML; LD_LIBRARY_PATH has the bare stem.
    lib(&d.join("prog"), "libnvidia-ml.so.1", "nvml_decoy", &[], &[]);
    lib(&d.join("dev"), "libcudnn_ops.so", "ops_decoy", &[], &[]);
    let runpath = format!("-Wl,-rpath,$ORIGIN:{}", d.join("drv").display());
    let main_lib = build::lib_from(
        &cudnn,
        "libcudnn.so.9",
        "#include <dlfcn.h>\n#include <stdio.h>\n\
         static const char *sub = \"libcudnn_ops.so\";\n\
         static const char *nvml = \"libnvidia-ml.so.1\";\n\
         int load_subs(void) {\n\
           char name[256];\n\
           snprintf(name, sizeof name, \"%s.%d\", sub, 9);\n\
           return (dlopen(name, RTLD_NOW) != 0) + (dlopen(nvml, RTLD_NOW) != 0);\n\
         }\n",
        &[],
        &["-Wl,--enable-new-dtags", &runpath, "-ldl"],
    );
    let prog_src = build::source(
        d,
        "prog",
        "#include <stdio.h>\n#include <string.h>\nint load_subs(void);\n\
         int main(void) {\n\
           if (load_subs() != 2) return 3;\n\
           FILE *f = fopen(\"/proc/self/maps\", \"r\"); char line[4096];\n\
           while (f && fgets(line, sizeof line, f)) {\n\
             char *p = strchr(line, '/');\n\
             if (p && (strstr(p, \"libcudnn_ops\") || strstr(p, \"libnvidia-ml\"))) fputs(p, stdout);\n\
           }\n\
           return 0;\n\
         }\n",
    );
    let prog = d.join("bin/prog");
    std::fs::create_dir_all(d.join("bin")).unwrap();
    let prog_runpath = format!("-Wl,-rpath,{}:{}", cudnn.display(), d.join("prog").display());
    build::cc(&[
        "-o",
        &prog.to_string_lossy(),
        &prog_src.to_string_lossy(),
        "-Wl,--no-as-needed",
        &main_lib.to_string_lossy(),
        "-Wl,--enable-new-dtags",
        &prog_runpath,
    ]);
    let dev = d.join("dev").to_string_lossy().into_owned();
    let run = std::process::Command::new(&prog)
        .env("LD_LIBRARY_PATH", &dev)
        .output()
        .expect("run the program");
    assert!(run.status.success(), "{run:?}");
    let mapped: std::collections::BTreeSet<String> = String::from_utf8_lossy(&run.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .collect();
    let real = |p: &str| std::fs::canonicalize(p).unwrap().to_string_lossy().into_owned();
    let want: std::collections::BTreeSet<String> = [
        real(&cudnn.join("libcudnn_ops.so.9").to_string_lossy()),
        real(&d.join("drv/libnvidia-ml.so.1").to_string_lossy()),
    ]
    .into();
    assert_eq!(mapped, want, "the program itself");

    let r = resolve(&prog, &[("LD_LIBRARY_PATH", &dev)]);
    let got: std::collections::BTreeSet<String> = ["libcudnn_ops.so.9", "libnvidia-ml.so.1"]
        .iter()
        .map(|n| {
            let l = first(&r, n);
            assert!(l.dlopen, "{n}: {l:?}");
            real(
                l.path
                    .as_deref()
                    .unwrap_or_else(|| panic!("{n} not found: {l:?}")),
            )
        })
        .collect();
    assert_eq!(got, mapped, "the tree against the real process");
    assert!(r.libraries.iter().all(|l| l.soname != "libcudnn_ops.so"));
}

#[test]
fn two_cuda_majors_in_one_process() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("lib");
    let rt12 = lib(&d, "libcudart.so.12", "a", &[], &[]);
    let blas13 = lib(&d, "libcublas.so.13", "b", &[], &[]);
    let blas12 = lib(&d, "libcublas.so.12", "c", &[], &[]);
    // cuFFT numbers its soname apart from CUDA (cuFFT 11 ships with CUDA 12): not a second major.
    let fft11 = lib(&d, "libcufft.so.11", "e", &[], &[]);
    let flag = format!("-Wl,-rpath,{}", d.display());
    let mixed = exe(&t.path().join("mixed"), &[&rt12, &blas13], &[&flag]);
    let same = exe(&t.path().join("same"), &[&rt12, &blas12, &fft11], &[&flag]);
    let r = resolve(&mixed, &[]);
    assert!(slugs(&r).contains(&"multiple-cuda-majors".to_string()));
    // The runtime's dlopen of the driver finds nothing here; that is the driver rules' finding, not this one's.
    let cuda = first(&r, "libcuda.so.1");
    assert!(cuda.dlopen && cuda.how == How::NotFound);
    assert!(!slugs(&r).contains(&"library-not-found".to_string()));
    assert!(!slugs(&resolve(&same, &[])).contains(&"multiple-cuda-majors".to_string()));
}

#[test]
fn ld_library_path_is_ignored_for_setuid_programs() {
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().unwrap();
    let dep = lib(&t.path().join("a"), "libdep.so.1", "dep", &[], &[]);
    let main = exe(&t.path().join("main"), &[&dep], &[]);
    let llp = t.path().join("a").to_string_lossy().into_owned();
    let env = [("LD_LIBRARY_PATH", llp.as_str())];
    assert_eq!(
        first(&resolve(&main, &env), "libdep.so.1").how,
        How::LdLibraryPath
    );
    std::fs::set_permissions(&main, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let r = resolve(&main, &env);
    assert!(r.secure);
    let l = first(&r, "libdep.so.1");
    assert_eq!(l.how, How::NotFound);
    assert!(
        l.trail
            .iter()
            .any(|s| s.how == How::LdLibraryPath && s.result == StepResult::Skipped)
    );
}

/// Builds `dir/name` as a shared library from `src` with a version script, and returns its path.
fn versioned_lib(dir: &Path, soname: &str, src: &str, map: &str, flags: &[&str]) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let m = build::source(dir, &format!("{soname}-map"), map);
    let script = format!("-Wl,--version-script={}", m.display());
    let mut all = vec![script.as_str()];
    all.extend_from_slice(flags);
    build::lib_from(dir, soname, src, &[], &all)
}

/// The pip-wheel failure of pytorch#111469: cuSPARSE's RUNPATH points at the nvjitlink wheel, but an older
/// toolkit's libnvJitLink.so.12 on LD_LIBRARY_PATH is searched first and lacks `__nvJitLinkComplete_12_4`.
#[test]
fn ld_library_path_shadows_a_wheel_runpath_and_a_symbol_goes_missing() {
    let t = tempfile::tempdir().unwrap();
    let sp = t.path().join("site-packages/nvidia");
    let map_new =
        "libnvJitLink.so.12 { global: __nvJitLinkCreate_12_0; __nvJitLinkComplete_12_4; local: *; };\n";
    let src_new =
        "int __nvJitLinkCreate_12_0(void){return 0;}\nint __nvJitLinkComplete_12_4(void){return 0;}\n";
    let wheel = versioned_lib(
        &sp.join("nvjitlink/lib"),
        "libnvJitLink.so.12",
        src_new,
        map_new,
        &[],
    );
    let map_old = "libnvJitLink.so.12 { global: __nvJitLinkCreate_12_0; local: *; };\n";
    let old = versioned_lib(
        &t.path().join("cuda-12.1/lib64"),
        "libnvJitLink.so.12",
        "int __nvJitLinkCreate_12_0(void){return 0;}\n",
        map_old,
        &[],
    );
    let cusparse_src =
        "int __nvJitLinkComplete_12_4(void);\nint cusparseCreate(void){return __nvJitLinkComplete_12_4();}\n";
    let cusparse = versioned_lib(
        &sp.join("cusparse/lib"),
        "libcusparse.so.12",
        cusparse_src,
        "libcusparse.so.12 { global: cusparseCreate; local: *; };\n",
        &[
            &wheel.to_string_lossy(),
            "-Wl,--enable-new-dtags",
            "-Wl,-rpath,$ORIGIN/../../nvjitlink/lib",
        ],
    );
    let main = exe(
        &t.path().join("app"),
        &[&cusparse],
        &[&format!("-Wl,-rpath,{}", sp.join("cusparse/lib").display())],
    );
    let llp = old.parent().unwrap().to_string_lossy().into_owned();
    let env = [("LD_LIBRARY_PATH", llp.as_str())];
    let r = resolve(&main, &env);
    let l = first(&r, "libnvJitLink.so.12");
    assert_eq!(l.how, How::LdLibraryPath);
    assert_eq!(l.path.as_deref(), Some(&*old.to_string_lossy()));
    agrees_with_glibc(&r, &main, &env);
    let findings = cudadiag::rules::loader::evaluate(std::slice::from_ref(&r));
    let shadowed = findings
        .iter()
        .find(|f| f.slug == "library-shadowed")
        .expect("library-shadowed");
    assert!(shadowed.message.contains("nvjitlink/lib"), "{}", shadowed.message);
    assert!(shadowed.help.contains("LD_LIBRARY_PATH"), "{}", shadowed.help);
    let missing = findings
        .iter()
        .find(|f| f.slug == "symbol-version-missing")
        .expect("symbol-version-missing");
    assert!(
        missing
            .message
            .contains("undefined symbol: __nvJitLinkComplete_12_4, version libnvJitLink.so.12"),
        "{}",
        missing.message
    );
    // Without the LD_LIBRARY_PATH entry, the wheel's copy loads and nothing is reported.
    let r = resolve(&main, &[]);
    assert_eq!(first(&r, "libnvJitLink.so.12").how, How::Runpath);
    assert!(cudadiag::rules::loader::evaluate(std::slice::from_ref(&r)).is_empty());
}

#[test]
fn a_version_the_provider_does_not_define() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let new = versioned_lib(
        &d.join("new"),
        "libw.so.1",
        "int f(void){return 1;}\nint g(void){return 2;}\n",
        "W_1 { global: f; local: *; };\nW_2 { global: g; } W_1;\n",
        &[],
    );
    versioned_lib(
        &d.join("old"),
        "libw.so.1",
        "int f(void){return 1;}\n",
        "W_1 { global: f; local: *; };\n",
        &[],
    );
    let user_src = build::source(d, "user", "int g(void);\nint u(void){return g();}\n");
    let user = d.join("libuser.so.1");
    build::cc(&[
        "-shared",
        "-fPIC",
        "-o",
        &user.to_string_lossy(),
        &user_src.to_string_lossy(),
        "-Wl,-soname,libuser.so.1",
        &new.to_string_lossy(),
    ]);
    let link = format!("-Wl,-rpath-link,{}", d.join("new").display());
    let main = exe(
        &d.join("main"),
        &[&user],
        &[&link, &format!("-Wl,-rpath,{}", d.display())],
    );
    let old_dir = d.join("old").to_string_lossy().into_owned();
    let r = resolve(&main, &[("LD_LIBRARY_PATH", old_dir.as_str())]);
    let findings = cudadiag::rules::loader::evaluate(std::slice::from_ref(&r));
    assert!(
        findings
            .iter()
            .any(|f| f.slug == "symbol-version-missing" && f.message.contains("version `W_2' not found")),
        "{findings:?}"
    );
    let new_dir = d.join("new").to_string_lossy().into_owned();
    let r = resolve(&main, &[("LD_LIBRARY_PATH", new_dir.as_str())]);
    assert!(!slugs(&r).contains(&"symbol-version-missing".to_string()));
}

#[test]
fn an_ancestor_rpath_is_skipped_when_the_requester_has_a_runpath() {
    let t = tempfile::tempdir().unwrap();
    let a = t.path().join("a");
    let leaf = lib(&a, "libleaf.so.1", "leaf", &[], &[]);
    let nowhere = format!("-Wl,-rpath,{}", t.path().join("empty").display());
    let mid = lib(
        &a,
        "libmid.so.1",
        "mid",
        &[&leaf],
        &["-Wl,--enable-new-dtags", &nowhere],
    );
    let rpath = format!("-Wl,-rpath,{}", a.display());
    let main = exe(
        &t.path().join("main"),
        &[&mid],
        &["-Wl,--disable-new-dtags", &rpath],
    );
    let r = resolve(&main, &[]);
    assert_eq!(first(&r, "libmid.so.1").how, How::Rpath);
    let l = first(&r, "libleaf.so.1");
    assert_eq!(l.how, How::NotFound);
    let skip = &l.trail[0];
    assert_eq!((skip.how, skip.result), (How::Rpath, StepResult::Skipped));
    assert!(skip.note.as_deref().is_some_and(|n| n.contains("has a runpath")));
    agrees_with_glibc(&r, &main, &[]);
}

/// The machine facts cudadiag reads out of ld.so's image and /proc/cpuinfo are the ones ld.so itself prints.
#[test]
fn platform_matches_what_ld_so_says_about_itself() {
    let Some(ldso) = crate::support::skip::system_ldso() else {
        return;
    };
    // ld.so run with only the environment given: its standard output and standard error.
    let run = |args: &[&std::ffi::OsStr], env: &[(&str, &str)]| {
        let out = std::process::Command::new(&ldso)
            .args(args)
            .env_clear()
            .envs(env.iter().copied())
            .output()
            .unwrap();
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (help, _) = run(&["--help".as_ref()], &[]);
    let dirs: Vec<String> = help
        .lines()
        .filter(|l| l.ends_with("(system search path)"))
        .map(|l| {
            l.trim()
                .trim_end_matches("(system search path)")
                .trim()
                .to_string()
        })
        .collect();
    if dirs.is_empty() {
        // glibc < 2.33 does not print them
        crate::support::skip::optional("this ld.so prints no system search path (glibc older than 2.33)");
        return;
    }
    let p = loader::platform::Platform::detect(&Root::host(), 62, true, Some(&ldso.to_string_lossy()));
    assert_eq!(p.system_dirs, dirs);
    let supported: Vec<String> = help
        .lines()
        .skip_while(|l| !l.starts_with("Subdirectories of glibc-hwcaps"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter(|l| l.contains("supported"))
        .map(|l| l.split_whitespace().next().unwrap_or("").to_string())
        .collect();
    assert_eq!(p.hwcaps, supported);
    // `$PLATFORM` is ld.so's `dl_platform` (`haswell` on most Intel processors, not `x86_64`).
    let (diag, _) = run(&["--list-diagnostics".as_ref()], &[]);
    if let Some(platform) = diag.lines().find_map(|l| l.strip_prefix("dl_platform=")) {
        assert_eq!(format!("{:?}", p.platform), platform);
    }
    // The subdirectories tried in each directory of the search, as `LD_DEBUG=libs` prints them for an
    // LD_LIBRARY_PATH entry: glibc-hwcaps ones, then (glibc 2.26–2.36) the legacy ones, then the directory.
    let dir = "/cudadiag-no-such-dir";
    let program = std::env::current_exe().unwrap();
    let (_, debug) = run(
        &["--list".as_ref(), program.as_os_str()],
        &[("LD_LIBRARY_PATH", dir), ("LD_DEBUG", "libs")],
    );
    let line = debug
        .lines()
        .find(|l| l.contains("search path=") && l.contains("(LD_LIBRARY_PATH)"));
    assert!(
        line.is_some(),
        "no LD_LIBRARY_PATH search in LD_DEBUG=libs:\n{debug}"
    );
    if let Some(line) = line {
        let list = line
            .split("search path=")
            .nth(1)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap();
        let mut legacy: Vec<String> = Vec::new();
        for entry in list.split(':') {
            let sub = entry.strip_prefix(dir).unwrap().trim_start_matches('/');
            if !sub.is_empty() && !sub.starts_with("glibc-hwcaps/") && !legacy.iter().any(|l| l == sub) {
                legacy.push(sub.to_string());
            }
        }
        assert_eq!(p.legacy_subdirs, legacy, "{line}");
    }
}

#[test]
fn the_programs_own_symbols_come_from_its_inspection_once_the_tree_is_walked() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let new = versioned_lib(
        &d.join("new"),
        "libv.so.1",
        "int foo(void){return 1;}\nint bar(void){return 2;}\n",
        "V_1 { global: foo; local: *; };\nV_2 { global: bar; } V_1;\n",
        &[],
    );
    versioned_lib(
        &d.join("old"),
        "libv.so.1",
        "int foo(void){return 1;}\nint baz(void){return 2;}\n",
        "V_1 { global: foo; local: *; };\nV_2 { global: baz; } V_1;\n",
        &[],
    );
    // The program itself imports bar@V_2; the copy its RPATH finds defines V_2, but not bar.
    let src = build::source(d, "main", "int bar(void);\nint main(void){return bar();}\n");
    let main = d.join("main");
    build::cc(&[
        "-o",
        &main.to_string_lossy(),
        &src.to_string_lossy(),
        &new.to_string_lossy(),
        &format!("-Wl,-rpath,{}", d.join("old").display()),
    ]);
    let facts = inspect::path(&main, &InspectOptions::default()).expect("inspect");
    let (root, env) = (Root::host(), Env::empty());
    let mut asked = 0;
    let r = loader::resolve_alongside(&root, &env, &main, &mut loader::Files::default(), || {
        asked += 1;
        loader::MainSymbols::of(&facts[0])
    })
    .expect("an ELF program");
    assert_eq!(asked, 1);
    assert_eq!(Some(&r), loader::resolve(&root, &env, &main, &facts[0]).as_ref());
    let findings = cudadiag::rules::loader::evaluate(std::slice::from_ref(&r));
    assert!(
        findings
            .iter()
            .any(|f| f.slug == "symbol-version-missing" && f.message.contains("bar, version V_2")),
        "{findings:?}"
    );
    // What the inspection says decides the program's own run-time loads: the static CUDA runtime loads the
    // driver; without it (as the inspection found) nothing is loaded for the program itself.
    assert!(r.libraries.iter().all(|l| !l.dlopen));
    let with_static = loader::resolve_alongside(&root, &env, &main, &mut loader::Files::default(), || {
        loader::MainSymbols {
            cudart_static: true,
            ..loader::MainSymbols::of(&facts[0])
        }
    })
    .expect("an ELF program");
    let cuda = first(&with_static, "libcuda.so.1");
    assert!(cuda.dlopen && cuda.needed_by == main.to_string_lossy());
    // Not a loadable program: nothing is asked.
    let data = build::source(d, "data", "not an ELF file");
    let none = loader::resolve_alongside(&root, &env, &data, &mut loader::Files::default(), || {
        panic!("asked about a file that is not a program")
    });
    assert!(none.is_none());
}

/// `glibc-too-old` fires when the root's glibc is older than what the program or a library it loads needs,
/// names the highest need and who has it, and takes the place of `symbol-version-missing` for those versions;
/// a glibc new enough (the near miss) gives neither.
#[test]
fn a_glibc_older_than_the_process_needs() {
    let needs_of =
        |r: &Resolution| cudadiag::rules::glibc::tree_floor(r).map(|(o, n)| (o.path.clone(), n.version));
    // glibc 2.28 (RHEL 8): the program's 2.34 and the library's 2.36 are both missing.
    let (t, main) = build::glibc_scenario(&["2.2.5", "2.17", "2.28"], Some("2.28"));
    let r = resolve_with(&Root::at(t.path()), &main, &[]);
    assert_eq!(
        first(&r, "libc.so.6").path.as_deref(),
        Some("/usr/lib64/libc.so.6")
    );
    assert_eq!(needs_of(&r), Some(("/opt/lib/libarc.so.1".into(), "2.36".into())));
    let findings = cudadiag::rules::loader::evaluate(std::slice::from_ref(&r));
    let old: Vec<_> = findings.iter().filter(|f| f.slug == "glibc-too-old").collect();
    assert_eq!(old.len(), 1, "{findings:#?}");
    assert!(
        old[0].message.contains(
            "/opt/lib/libarc.so.1 (loaded by it) needs GLIBC_2.36 (from libc.so.6), this machine's glibc is \
             2.28: version `GLIBC_2.36' not found"
        ),
        "{}",
        old[0].message
    );
    let because = old[0].evidence.join("\n");
    assert!(
        because.contains(&format!("{} needs GLIBC_2.34 from libc.so.6", r.objects[0].path)),
        "{because}"
    );
    assert!(
        because.contains("/usr/lib64/libc.so.6 defines versions up to GLIBC_2.28"),
        "{because}"
    );
    assert!(
        old[0].help.contains("x86_64-unknown-linux-gnu.2.17"),
        "{}",
        old[0].help
    );
    // One cause, one finding: the GLIBC_ versions are not also reported as symbol-version-missing.
    assert!(
        !findings.iter().any(|f| f.slug == "symbol-version-missing"),
        "{findings:#?}"
    );

    // glibc 2.34 (RHEL 9): only the library's 2.36 is missing.
    let (t, main) = build::glibc_scenario(&["2.2.5", "2.17", "2.28", "2.34"], Some("2.34"));
    let r = resolve_with(&Root::at(t.path()), &main, &[]);
    let findings = cudadiag::rules::loader::evaluate(std::slice::from_ref(&r));
    let old = findings
        .iter()
        .find(|f| f.slug == "glibc-too-old")
        .expect("glibc-too-old");
    assert_eq!(old.evidence.len(), 2, "{:?}", old.evidence);
    assert!(old.help.contains("Debian 12"), "{}", old.help);

    // Near miss: glibc 2.36 defines every version and symbol both need.
    let (t, main) = build::glibc_scenario(&["2.2.5", "2.17", "2.28", "2.34", "2.36"], Some("2.36"));
    let r = resolve_with(&Root::at(t.path()), &main, &[]);
    let findings = cudadiag::rules::loader::evaluate(std::slice::from_ref(&r));
    assert!(
        !findings
            .iter()
            .any(|f| f.slug == "glibc-too-old" || f.slug == "symbol-version-missing"),
        "{findings:#?}"
    );
}

/// A libc that lacks an old `GLIBC_` version its release should have (a damaged or foreign copy) is no
/// glibc-too-old: the version is older than the release, so it stays `symbol-version-missing`.
#[test]
fn a_libc_missing_an_older_version_is_symbol_version_missing() {
    let (t, main) = build::glibc_scenario(&["2.17", "2.34", "2.36"], Some("2.36"));
    let r = resolve_with(&Root::at(t.path()), &main, &[]);
    let findings = cudadiag::rules::loader::evaluate(std::slice::from_ref(&r));
    assert!(
        !findings.iter().any(|f| f.slug == "glibc-too-old"),
        "{findings:#?}"
    );
    // The program needs GLIBC_2.2.5 (for `__cxa_finalize`), which this libc does not define.
    assert!(
        r.objects[0]
            .version_needs
            .iter()
            .any(|n| n.versions.iter().any(|v| v == "GLIBC_2.2.5")),
        "{:?}",
        r.objects[0].version_needs
    );
    assert!(
        findings
            .iter()
            .any(|f| f.slug == "symbol-version-missing"
                && f.message.contains("version `GLIBC_2.2.5' not found")),
        "{findings:#?}"
    );
}

/// Issue 21: a framework's vendored, renamed cudart (`libcudart-<hash>.so.12`) next to the plain one another
/// library needs: two copies of one runtime in one process.
#[test]
fn a_vendored_and_a_plain_cudart_are_two_copies() {
    use cudadiag::rules::duplicates::duplicate_cuda_libraries;
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("lib");
    let rt12 = lib(&d, "libcudart.so.12", "a", &[], &[]);
    let vendored = lib(&d, "libcudart-9335f6a2.so.12", "b", &[], &[]);
    let flag = format!("-Wl,-rpath,{}", d.display());
    let ext = lib(&d, "libtorch_ext.so", "c", &[&vendored], &[&flag]);
    let blas12 = lib(&d, "libcublas.so.12", "e", &[], &[]);
    let both = exe(&t.path().join("both"), &[&rt12, &ext], &[&flag]);
    let r = resolve(&both, &[]);
    let f = duplicate_cuda_libraries(&r);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].slug, "duplicate-cuda-library");
    assert!(f[0].message.contains("2 copies of libcudart (CUDA 12)"));
    assert_eq!(f[0].evidence.len(), 2);
    // near miss: one cudart and other CUDA libraries of the same major
    let one = exe(&t.path().join("one"), &[&rt12, &blas12], &[&flag]);
    assert!(duplicate_cuda_libraries(&resolve(&one, &[])).is_empty());
}

/// A second copy reached only by a run-time `dlopen` of a name in its caller's data (cuDNN's graph library names
/// `libnvrtc.so`, which it opens for its run-time compiled engines alone): on the H200 a convolution under torch
/// did not open it, so it is a note that one may be loaded, not a warning that two are.
#[test]
fn a_copy_opened_only_by_a_name_in_data_is_a_note_that_it_may_be_loaded() {
    use cudadiag::rules::duplicates::duplicate_cuda_libraries;
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let cudart = lib(&d.join("rt"), "libcudart.so.12", "cudaMalloc", &[], &[]);
    let nvrtc = lib(&d.join("rt"), "libnvrtc.so.12", "nvrtcVersion", &[], &[]);
    // The toolkit's copy, under its development name, where the caller's RUNPATH leads.
    let dev = lib(&d.join("toolkit"), "libnvrtc.so.12", "nvrtcVersion", &[], &[]);
    std::fs::rename(&dev, d.join("toolkit/libnvrtc.so")).unwrap();
    let graph = build::lib_from(
        &d.join("rt"),
        "libgraph.so.9",
        "const char *nvrtc = \"libnvrtc.so\";\nconst char *f(void) { return nvrtc; }\n",
        &[&cudart],
        &[
            "-Wl,--enable-new-dtags",
            &format!("-Wl,-rpath,{}", d.join("toolkit").display()),
        ],
    );
    let main = exe(
        &d.join("main"),
        &[&cudart, &nvrtc, &graph],
        &[&format!("-Wl,-rpath,{}", d.join("rt").display())],
    );
    let r = resolve(&main, &[]);
    let f = duplicate_cuda_libraries(&r);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].severity, cudadiag::findings::Severity::Note, "{f:?}");
    assert!(f[0].message.contains("may be loaded"), "{}", f[0].message);
    assert!(
        f[0].evidence
            .iter()
            .any(|e| e.contains("toolkit/libnvrtc.so (opened at run time by name")),
        "{:?}",
        f[0].evidence
    );
}

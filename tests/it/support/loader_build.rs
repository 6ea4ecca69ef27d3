//! Builds tiny ELF programs and libraries with the system's `cc` for the loader scenario tests, and runs the
//! system's `ld.so --list` on them for a cross-check with glibc.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `cc` with `args`, panicking with its output when it fails (test set-up, not the code under test).
pub fn cc(args: &[&str]) {
    let out = Command::new("cc").args(args).output().expect("cc runs");
    assert!(
        out.status.success(),
        "cc {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Writes `src` to `dir/name.c` and returns the path.
pub fn source(dir: &Path, name: &str, src: &str) -> PathBuf {
    let p = dir.join(format!("{name}.c"));
    std::fs::write(&p, src).expect("write source");
    p
}

/// A shared library `dir/<soname>` defining `int <func>(void)`, linked against `deps` (paths), with extra
/// linker flags.
pub fn lib(dir: &Path, soname: &str, func: &str, deps: &[&Path], flags: &[&str]) -> PathBuf {
    lib_from(
        dir,
        soname,
        &format!("int {func}(void) {{ return 1; }}\n"),
        deps,
        flags,
    )
}

/// A shared library `dir/<soname>` built from the C source `src`, linked against `deps` (paths), with extra
/// linker flags.
pub fn lib_from(dir: &Path, soname: &str, src: &str, deps: &[&Path], flags: &[&str]) -> PathBuf {
    std::fs::create_dir_all(dir).expect("mkdir");
    let src = source(dir, &format!("{soname}-src"), src);
    let out = dir.join(soname);
    let soflag = format!("-Wl,-soname,{soname}");
    let mut args: Vec<&str> = vec!["-shared", "-fPIC", "-o"];
    let out_s = out.to_string_lossy().into_owned();
    let src_s = src.to_string_lossy().into_owned();
    args.push(&out_s);
    args.push(&src_s);
    args.push(&soflag);
    args.push("-Wl,--no-as-needed");
    let deps_s: Vec<String> = deps.iter().map(|d| d.to_string_lossy().into_owned()).collect();
    for d in &deps_s {
        args.push(d);
    }
    args.extend_from_slice(flags);
    cc(&args);
    out
}

/// An executable `path` linked against `deps`, with extra linker flags.
pub fn exe(path: &Path, deps: &[&Path], flags: &[&str]) -> PathBuf {
    let dir = path.parent().expect("parent");
    std::fs::create_dir_all(dir).expect("mkdir");
    let src = source(dir, "main", "int main(void) { return 0; }\n");
    let out_s = path.to_string_lossy().into_owned();
    let src_s = src.to_string_lossy().into_owned();
    let mut args: Vec<&str> = vec!["-o", &out_s, &src_s, "-Wl,--no-as-needed"];
    let deps_s: Vec<String> = deps.iter().map(|d| d.to_string_lossy().into_owned()).collect();
    for d in &deps_s {
        args.push(d);
    }
    args.extend_from_slice(flags);
    cc(&args);
    path.to_path_buf()
}

/// The system's x86-64 glibc interpreter, when there is one.
pub fn system_ldso() -> Option<PathBuf> {
    let p = PathBuf::from("/lib64/ld-linux-x86-64.so.2");
    (cfg!(all(
        target_os = "linux",
        target_arch = "x86_64",
        target_env = "gnu"
    )) && p.exists())
    .then_some(p)
}

/// glibc's own answer: `LD_TRACE_LOADED_OBJECTS=1 ld.so FILE` (what `ldd` runs: trace mode maps the libraries
/// and runs none of the program's code; unlike `--list` it reports a missing library as `not found` instead of
/// stopping) with exactly `env`, as `name -> Some(path) | None (not found)`. Named on ld.so's command line, the
/// file is opened by that name, and its `$ORIGIN` is that name's directory, as for a library a process opens
/// with `dlopen`.
pub fn glibc_list(file: &Path, env: &[(&str, &str)]) -> Option<Vec<(String, Option<String>)>> {
    let ldso = system_ldso()?;
    let out = Command::new(ldso)
        .arg(file)
        .env_clear()
        .env("LD_TRACE_LOADED_OBJECTS", "1")
        .envs(env.iter().copied())
        .output()
        .ok()?;
    Some(trace_lines(&String::from_utf8_lossy(&out.stdout)))
}

/// glibc's answer for the program `file` started by the kernel, as a user starts it: the same trace mode set
/// in its environment (ld.so lists the libraries and exits before the program's code runs). Unlike
/// [`glibc_list`], the program's `$ORIGIN` is then the directory of its real path (`/proc/self/exe`), links
/// resolved. Only for programs the tests built.
pub fn glibc_exec_list(file: &Path) -> Option<Vec<(String, Option<String>)>> {
    system_ldso()?;
    let out = Command::new(file)
        .env_clear()
        .env("LD_TRACE_LOADED_OBJECTS", "1")
        .output()
        .ok()?;
    Some(trace_lines(&String::from_utf8_lossy(&out.stdout)))
}

/// The `name => path` lines of ld.so's trace mode (and the interpreter's bare path line).
fn trace_lines(text: &str) -> Vec<(String, Option<String>)> {
    let mut list = Vec::new();
    for line in text.lines() {
        let line = line.trim_start_matches('\t');
        if let Some((name, rest)) = line.split_once(" => ") {
            let path = rest.split(" (0x").next().unwrap_or(rest).trim();
            list.push((name.to_string(), (path != "not found").then(|| path.to_string())));
        } else if line.starts_with('/') && !line.contains("/ld-linux") {
            let path = line.split(" (0x").next().unwrap_or(line).to_string();
            list.push((path.clone(), Some(path)));
        }
    }
    list
}

/// A stand-in glibc `libc.so.6` in `dir`: one version node per entry of `versions` (`2.2.5`, `2.28`, …,
/// oldest first, each inheriting the one before, as glibc's do), each with a function of its own; the version
/// nodes from 2.34 and 2.36 also define `__libc_start_main` and `arc4random`, the symbols programs built on
/// glibc 2.34+ and a library calling `arc4random` need in those versions. With `banner`, glibc's banner line
/// "GNU C Library (…) stable release version BANNER." is in its `.rodata`.
pub fn fake_libc(dir: &Path, versions: &[&str], banner: Option<&str>) -> PathBuf {
    std::fs::create_dir_all(dir).expect("mkdir");
    let mut src = String::new();
    if let Some(b) = banner {
        src.push_str(&format!(
            "__attribute__((used)) static const char banner[] = \
             \"GNU C Library (cudadiag test) stable release version {b}.\\nCopyright (C) 2022.\\n\";\n"
        ));
    }
    let mut map = String::new();
    let mut prev: Option<String> = None;
    for v in versions {
        let f = format!("f_{}", v.replace('.', "_"));
        src.push_str(&format!("int {f}(void) {{ return 0; }}\n"));
        let mut syms = vec![f];
        for (at, sym) in [("2.34", "__libc_start_main"), ("2.36", "arc4random")] {
            if *v == at {
                src.push_str(&format!("int {sym}(void) {{ return 0; }}\n"));
                syms.push(sym.to_string());
            }
        }
        let globals: String = syms.iter().map(|s| format!("{s}; ")).collect();
        let local = if prev.is_none() { "local: *; " } else { "" };
        let parent = prev.as_deref().unwrap_or("");
        map.push_str(&format!("GLIBC_{v} {{ global: {globals}{local}}} {parent};\n"));
        prev = Some(format!("GLIBC_{v}"));
    }
    let m = source(dir, "libc-map", &map);
    let script = format!("-Wl,--version-script={}", m.display());
    lib_from(dir, "libc.so.6", &src, &[], &["-nostdlib", &script])
}

/// A program built on this machine (glibc 2.34 or later: it needs `__libc_start_main@GLIBC_2.34`) and a
/// library of it calling `arc4random` (`GLIBC_2.36`), in a root whose `libc.so.6` is a stand-in of a given
/// release. Returns the root's directory and the program.
pub fn glibc_scenario(libc: &[&str], banner: Option<&str>) -> (tempfile::TempDir, std::path::PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    fake_libc(&root.join("usr/lib64"), libc, banner);
    let arc = lib_from(
        &root.join("opt/lib"),
        "libarc.so.1",
        "#include <stdlib.h>\nunsigned int draw(void) { return arc4random(); }\n",
        &[],
        &[],
    );
    let main = exe(&root.join("app/main"), &[&arc], &["-Wl,-rpath,/opt/lib"]);
    (t, main)
}

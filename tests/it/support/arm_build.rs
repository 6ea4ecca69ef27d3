//! Builds aarch64 sysroots for the loader tests: programs and libraries from Debian's cross compiler
//! (`gcc-aarch64-linux-gnu`, installed by `.ci/run`), the real arm64 `ld-linux-aarch64.so.1` and `libc.so.6`
//! of its `libc6-arm64-cross`, `ld.so.cache` files with any flags, and glibc's own answer from that ld.so run
//! under `qemu-aarch64` where `qemu-user` is installed.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Debian's cross compiler.
pub const CROSS_CC: &str = "aarch64-linux-gnu-gcc";
/// Where `libc6-arm64-cross` puts the arm64 glibc.
pub const CROSS_LIB: &str = "/usr/aarch64-linux-gnu/lib";

/// Runs the cross compiler with `args`, panicking with its output (test set-up, not the code under test).
pub fn cross_cc(args: &[&str]) {
    let out = Command::new(CROSS_CC).args(args).output().unwrap_or_else(|e| {
        panic!("{CROSS_CC} cannot run ({e}): install gcc-aarch64-linux-gnu (as .ci/run does)")
    });
    assert!(
        out.status.success(),
        "{CROSS_CC} {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An aarch64 shared library `dir/<soname>` defining `int <func>(void)`, with extra flags.
pub fn lib(dir: &Path, soname: &str, func: &str, flags: &[&str]) -> PathBuf {
    std::fs::create_dir_all(dir).expect("mkdir");
    let src = dir.join(format!("{soname}-src.c"));
    std::fs::write(&src, format!("int {func}(void) {{ return 1; }}\n")).expect("write");
    let out = dir.join(soname);
    let (o, s) = (out.to_string_lossy(), src.to_string_lossy());
    let soflag = format!("-Wl,-soname,{soname}");
    let mut args = vec!["-shared", "-fPIC", "-o", &o, &s, &soflag];
    args.extend_from_slice(flags);
    cross_cc(&args);
    std::fs::remove_file(&src).expect("rm");
    out
}

/// An aarch64 program `path` calling `int <f>(void)` for each `funcs`, linked against `deps` (paths, each
/// becoming a DT_NEEDED of its soname), with extra flags.
pub fn exe(path: &Path, funcs: &[&str], deps: &[&Path], flags: &[&str]) -> PathBuf {
    let dir = path.parent().expect("parent");
    std::fs::create_dir_all(dir).expect("mkdir");
    let src = dir.join("main.c");
    let decls: String = funcs.iter().map(|f| format!("int {f}(void);\n")).collect();
    let calls: String = funcs.iter().map(|f| format!(" + {f}()")).collect();
    std::fs::write(&src, format!("{decls}int main(void) {{ return 0{calls}; }}\n")).expect("write");
    let (o, s) = (
        path.to_string_lossy().into_owned(),
        src.to_string_lossy().into_owned(),
    );
    let deps: Vec<String> = deps.iter().map(|d| d.to_string_lossy().into_owned()).collect();
    let mut args: Vec<&str> = vec!["-o", &o, &s, "-Wl,--no-as-needed"];
    args.extend(deps.iter().map(String::as_str));
    args.extend_from_slice(flags);
    cross_cc(&args);
    std::fs::remove_file(&src).expect("rm");
    path.to_path_buf()
}

/// A Debian-style arm64 root at `root`: the real `/lib/ld-linux-aarch64.so.1` (whose compiled-in default
/// directories are `/lib/aarch64-linux-gnu`, `/usr/lib/aarch64-linux-gnu`, `/lib`, `/usr/lib`) and
/// `libc.so.6` in the multiarch directory, and a `/proc/cpuinfo` of a Neoverse core (LSE `atomics`).
pub fn debian_root(root: &Path) {
    let copy = |from: &str, to: &str| {
        let to = root.join(to.trim_start_matches('/'));
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        std::fs::copy(Path::new(CROSS_LIB).join(from), &to).unwrap_or_else(|e| {
            panic!("{CROSS_LIB}/{from}: {e}: install gcc-aarch64-linux-gnu (as .ci/run does)")
        });
    };
    copy("ld-linux-aarch64.so.1", "/lib/ld-linux-aarch64.so.1");
    copy("libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6");
    std::fs::create_dir_all(root.join("proc")).expect("mkdir");
    std::fs::write(
        root.join("proc/cpuinfo"),
        "processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 \
         atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve\n\
         CPU implementer\t: 0x41\nCPU part\t: 0xd4f\n",
    )
    .expect("write");
}

/// A new-format (`glibc-ld.so.cache1.1`) cache of `(name, path, flags)` entries, sorted as ldconfig sorts
/// them: what an aarch64 `ldconfig` writes is flags `0x0a03` (`FLAG_AARCH64_LIB64 | FLAG_ELF_LIBC6`), for
/// every 64-bit ELF file it finds (its `readelflib.c` does not look at `e_machine`); an x86-64 one writes
/// `0x0303` (`loader_scenarios.rs`).
pub fn ld_cache(entries: &[(&str, &str, i32)]) -> Vec<u8> {
    let mut sorted = entries.to_vec();
    sorted.sort_by(|a, b| cudadiag::loader::cache::libcmp(b.0, a.0));
    let header = 48 + 24 * sorted.len();
    let mut strings = Vec::new();
    let mut rows = Vec::new();
    for (k, v, flags) in &sorted {
        let ko = header + strings.len();
        strings.extend_from_slice(k.as_bytes());
        strings.push(0);
        let vo = header + strings.len();
        strings.extend_from_slice(v.as_bytes());
        strings.push(0);
        rows.push((*flags, ko as u32, vo as u32));
    }
    let mut d = b"glibc-ld.so.cache1.1".to_vec();
    d.extend_from_slice(&(sorted.len() as u32).to_le_bytes());
    d.extend_from_slice(&(strings.len() as u32).to_le_bytes());
    d.extend_from_slice(&[2, 0, 0, 0]);
    d.extend_from_slice(&[0; 16]);
    for (flags, k, v) in rows {
        d.extend_from_slice(&flags.to_le_bytes());
        d.extend_from_slice(&k.to_le_bytes());
        d.extend_from_slice(&v.to_le_bytes());
        d.extend_from_slice(&0u32.to_le_bytes());
        d.extend_from_slice(&0u64.to_le_bytes());
    }
    d.extend_from_slice(&strings);
    d
}

/// `qemu-aarch64`, when `qemu-user` is installed.
pub fn qemu() -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join("qemu-aarch64"))
        .find(|p| p.is_file())
}

/// glibc's own answer for the program `main` of the aarch64 root `root`: its real ld.so run under qemu in trace
/// mode (`LD_TRACE_LOADED_OBJECTS=1`, what `ldd` runs: libraries mapped, none of the program's code run, a
/// missing one listed as `not found`), with the root as qemu's prefix (so `/lib/…` and `/etc/ld.so.cache` are
/// the root's) and only `env`, as `name -> Some(path inside the root) | None`. `None` without qemu.
pub fn glibc_list(root: &Path, main: &Path, env: &[(&str, &str)]) -> Option<Vec<(String, Option<String>)>> {
    let qemu = qemu()?;
    let mut cmd = Command::new(qemu);
    cmd.env_clear()
        .arg("-L")
        .arg(root)
        .arg("-E")
        .arg("LD_TRACE_LOADED_OBJECTS=1");
    for (k, v) in env {
        cmd.arg("-E").arg(format!("{k}={v}"));
    }
    let out = cmd
        .arg(root.join("lib/ld-linux-aarch64.so.1"))
        .arg(main)
        .output()
        .ok()?;
    let prefix = root.to_string_lossy().into_owned();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut list = Vec::new();
    for line in text.lines() {
        let line = line.trim_start_matches('\t');
        if let Some((name, rest)) = line.split_once(" => ") {
            if name.contains("ld-linux-aarch64") {
                continue;
            }
            let path = rest.split(" (0x").next().unwrap_or(rest).trim();
            let path = path.strip_prefix(&prefix).unwrap_or(path);
            list.push((name.to_string(), (path != "not found").then(|| path.to_string())));
        }
    }
    Some(list)
}

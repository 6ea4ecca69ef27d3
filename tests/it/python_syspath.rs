//! Differential test: `python::syspath` against the real interpreter. Small environments are built with the
//! machine's own `python3` (`-m venv` with and without `--system-site-packages`, `.pth` files with relative,
//! absolute, missing, duplicate, hidden and `import` lines, a fake home with a user site), and for each case
//! the computed `sys.path` must equal what `python -c 'import sys, json; print(json.dumps(sys.path))'` prints
//! with the same environment, flags and working directory. The test runs Python as ground truth; the product
//! never does. Every `python3` found (`python3` on `PATH`, and Debian's `/usr/bin/python3` when it is another
//! one) is compared, so that Debian's `dist-packages` is checked wherever the machine has it.

use cudadiag::python::syspath::{self, Flags, Main, NotModelled, Request, Target};
use cudadiag::system::{Env, Root};
use std::path::{Path, PathBuf};
use std::process::Command;

const PRINT: &str = "import sys, json; print(json.dumps(sys.path))";

/// Cases compared per interpreter; the test fails below this many in all.
const FLOOR: usize = 12;

/// What the interpreter at `exe` says about itself: its real executable and `X.Y`.
fn describe(exe: &Path) -> Option<(PathBuf, String)> {
    let out = Command::new(exe)
        .args([
            "-c",
            "import sys; print(sys.executable); print('%d.%d' % sys.version_info[:2])",
        ])
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let mut lines = text.lines();
    Some((PathBuf::from(lines.next()?), lines.next()?.to_string()))
}

fn interpreters() -> Vec<(PathBuf, String)> {
    let mut out: Vec<(PathBuf, String)> = Vec::new();
    for exe in [Path::new("python3"), Path::new("/usr/bin/python3")] {
        if let Some((real, xy)) = describe(exe)
            && !out
                .iter()
                .any(|(p, _)| std::fs::canonicalize(p).ok() == std::fs::canonicalize(&real).ok())
        {
            out.push((real, xy));
        }
    }
    out
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn venv(base: &Path, dir: &Path, system: bool) {
    let mut c = Command::new(base);
    c.args(["-m", "venv", "--without-pip"]);
    if system {
        c.arg("--system-site-packages");
    }
    let st = c.arg(dir).status().unwrap();
    assert!(st.success(), "{} -m venv {}", base.display(), dir.display());
}

/// `.pth` files in `site`: sorted names (capitals first), a hidden one, relative, absolute, missing,
/// duplicate, a file, trailing blanks, comments and an `import` line (one that leaves `sys.path` alone).
fn pth_files(site: &Path, extra: &Path) {
    for d in ["rel_a", "rel_b", "rel_c", "hidden_dir"] {
        std::fs::create_dir_all(site.join(d)).unwrap();
    }
    std::fs::create_dir_all(extra.join("abs_a")).unwrap();
    write(&site.join("a_file.txt"), "x");
    write(
        &site.join("a.pth"),
        &format!(
            "# a comment\n\nrel_a\n{}\nmissing_dir\nrel_a\n../site-packages/rel_a\nimport os\nrel_b   \na_file.txt\n",
            extra.join("abs_a").display()
        ),
    );
    write(&site.join("B.pth"), "rel_c\n");
    write(
        &site.join("z.pth"),
        &format!("{}\nrel_b\n", extra.join("abs_a").display()),
    );
    write(&site.join(".hidden.pth"), "hidden_dir\n");
}

struct Case {
    name: String,
    exe: PathBuf,
    args: Vec<String>,
    main: Main,
    flags: Flags,
    env: Vec<(String, String)>,
}

fn truth(case: &Case, cwd: &Path) -> Vec<String> {
    let mut c = Command::new(&case.exe);
    c.env_clear().current_dir(cwd).args(&case.args);
    c.envs(case.env.iter().map(|(k, v)| (k, v)));
    match &case.main {
        Main::Command => c.args(["-c", PRINT]),
        Main::Module => c.args(["-m", "syspath_probe"]),
        Main::Script(s) => c.arg(s),
        Main::Interactive => unreachable!("not a case"),
    };
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        case.name,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn model(case: &Case, cwd: &Path) -> syspath::SysPath {
    let mut env = Env::empty();
    for (k, v) in &case.env {
        env.set(k, v);
    }
    let req = Request {
        target: Target::Interpreter(case.exe.clone()),
        main: case.main.clone(),
        flags: case.flags.clone(),
        cwd: cwd.to_path_buf(),
        uid: None,
    };
    syspath::compute(&Root::host(), &env, &req).unwrap_or_else(|e| panic!("{}: {e}", case.name))
}

/// The cases for one base interpreter, in a fresh directory.
fn cases(t: &Path, base: &Path, xy: &str) -> Vec<Case> {
    let home = t.join("home");
    let user_site = home.join(format!(".local/lib/python{xy}/site-packages"));
    std::fs::create_dir_all(user_site.join("user_rel")).unwrap();
    write(&user_site.join("user.pth"), "user_rel\n");
    let plain = t.join("venv");
    let system = t.join("venv-system");
    venv(base, &plain, false);
    venv(base, &system, true);
    for v in [&plain, &system] {
        pth_files(&v.join(format!("lib/python{xy}/site-packages")), &t.join("extra"));
    }
    std::fs::create_dir_all(t.join("pp/abs")).unwrap();
    write(&t.join("work/syspath_probe.py"), PRINT);
    write(&t.join("scripts/probe.py"), PRINT);
    std::fs::create_dir_all(t.join("links")).unwrap();
    std::os::unix::fs::symlink("../scripts/probe.py", t.join("links/probe.py")).unwrap();
    let prefix = String::from_utf8(
        Command::new(base)
            .args(["-c", "import sys; print(sys.prefix, end='')"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let home_var = ("HOME".to_string(), home.display().to_string());
    let pythonpath = format!(
        "rel_pp:{}:/nonexistent/pp::{}/lib/python{xy}",
        t.join("pp/abs").display(),
        prefix
    );
    let case = |name: &str, exe: &Path, args: &[&str], main: Main, flags: Flags, env: &[(&str, &str)]| {
        let mut vars = vec![home_var.clone()];
        vars.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        Case {
            name: format!("{} {name}", base.display()),
            exe: exe.to_path_buf(),
            args: args.iter().map(|a| a.to_string()).collect(),
            main,
            flags,
            env: vars,
        }
    };
    let none = Flags::default;
    let py = |d: &Path| d.join("bin/python");
    let new = xy
        .split('.')
        .nth(1)
        .and_then(|m| m.parse::<u32>().ok())
        .is_some_and(|m| m >= 11);
    let mut out = vec![
        case("base, user site", base, &[], Main::Command, none(), &[]),
        case(
            "base, PYTHONNOUSERSITE",
            base,
            &[],
            Main::Command,
            none(),
            &[("PYTHONNOUSERSITE", "1")],
        ),
        case(
            "base, PYTHONPATH",
            base,
            &[],
            Main::Command,
            none(),
            &[("PYTHONPATH", &pythonpath)],
        ),
        case(
            "base, -s",
            base,
            &["-s"],
            Main::Command,
            Flags {
                no_user_site: true,
                ..none()
            },
            &[],
        ),
        case(
            "base, -E",
            base,
            &["-E"],
            Main::Command,
            Flags {
                ignore_environment: true,
                ..none()
            },
            &[("PYTHONPATH", &pythonpath), ("PYTHONNOUSERSITE", "1")],
        ),
        case(
            "base, -I",
            base,
            &["-I"],
            Main::Command,
            Flags {
                isolated: true,
                ..none()
            },
            &[("PYTHONPATH", &pythonpath)],
        ),
        case(
            "base, -S",
            base,
            &["-S"],
            Main::Command,
            Flags {
                no_site: true,
                ..none()
            },
            &[],
        ),
        case(
            "base, PYTHONHOME",
            base,
            &[],
            Main::Command,
            none(),
            &[("PYTHONHOME", &prefix)],
        ),
        case("venv, .pth files", &py(&plain), &[], Main::Command, none(), &[]),
        case(
            "venv, PYTHONPATH",
            &py(&plain),
            &[],
            Main::Command,
            none(),
            &[("PYTHONPATH", &pythonpath)],
        ),
        case(
            "venv --system-site-packages, user site",
            &py(&system),
            &[],
            Main::Command,
            none(),
            &[],
        ),
        case(
            "venv --system-site-packages, -m",
            &py(&system),
            &[],
            Main::Module,
            none(),
            &[],
        ),
        case(
            "venv, script through a link",
            &py(&plain),
            &[],
            Main::Script(t.join("links/probe.py")),
            none(),
            &[],
        ),
        case(
            "venv, PYTHONUSERBASE",
            &py(&system),
            &[],
            Main::Command,
            none(),
            &[("PYTHONUSERBASE", &home.join(".local").display().to_string())],
        ),
    ];
    if new {
        out.push(case(
            "venv, -P",
            &py(&plain),
            &["-P"],
            Main::Command,
            Flags {
                safe_path: true,
                ..none()
            },
            &[],
        ));
        out.push(case(
            "venv, PYTHONSAFEPATH",
            &py(&plain),
            &[],
            Main::Module,
            none(),
            &[
                ("PYTHONSAFEPATH", "1"),
                ("PYTHONPATH", &t.join("work").display().to_string()),
            ],
        ));
    }
    out
}

#[test]
fn sys_path_matches_the_real_interpreter() {
    let pythons = interpreters();
    if pythons.is_empty() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI has python3, and none was found"
        );
        // The harness shows this with --nocapture: a test that cannot run says why.
        #[allow(clippy::disallowed_macros)]
        {
            eprintln!("skipped: no python3 on this machine to compare sys.path with");
        }
        return;
    }
    let mut compared = 0;
    let mut imports_listed = 0;
    for (base, xy) in &pythons {
        let t = tempfile::tempdir().unwrap();
        let cwd = t.path().join("work");
        for case in cases(t.path(), base, xy) {
            let want = truth(&case, &cwd);
            let got = model(&case, &cwd);
            assert_eq!(
                got.paths(),
                want,
                "{}: computed sys.path differs from Python's\n{got:#?}",
                case.name
            );
            imports_listed += got
                .not_modelled
                .iter()
                .filter(|n| matches!(n, NotModelled::PthImport { text, .. } if text == "import os"))
                .count();
            compared += 1;
        }
    }
    #[allow(clippy::disallowed_macros)]
    {
        eprintln!(
            "sys.path compared in {compared} cases over {} interpreters",
            pythons.len()
        );
    }
    assert!(compared >= FLOOR, "only {compared} cases compared");
    assert!(
        imports_listed > 0,
        "the .pth import line was never listed as not modelled"
    );
}

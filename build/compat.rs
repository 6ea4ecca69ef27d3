//! The bundled matrix as Rust code: `build.rs` parses and validates `data/compat.toml` with the matrix loader's
//! own parser (`src/matrix/parse.rs`) and writes the [`Matrix`] it gets as literals, so that the binary builds
//! it without a TOML parse (a fifth of `doctor`'s instructions went to that parse). Each struct is written by
//! destructuring it whole: a field added to the model and not here fails this build script's compilation,
//! and `the_compiled_matrix_is_the_parse_of_the_toml` compares the result with a parse at run time.

use crate::matrix::model::*;
use crate::matrix::version::{Cc, CudaVersion, DriverVersion};
use std::fmt::Write;

/// A value written as a Rust expression of its type.
pub trait Lit {
    /// Appends the expression to `o`.
    fn lit(&self, o: &mut String);
}

impl Lit for String {
    fn lit(&self, o: &mut String) {
        // `{:?}` of a `str` is a Rust string literal: quotes, backslashes and control characters escaped.
        let _ = write!(o, "s({self:?})");
    }
}

macro_rules! lit_display {
    ($($t:ty),*) => {$(
        impl Lit for $t {
            fn lit(&self, o: &mut String) {
                let _ = write!(o, "{self}");
            }
        }
    )*};
}
lit_display!(u16, u32, usize, bool);

impl<T: Lit> Lit for Option<T> {
    fn lit(&self, o: &mut String) {
        match self {
            Some(v) => {
                o.push_str("Some(");
                v.lit(o);
                o.push(')');
            }
            None => o.push_str("None"),
        }
    }
}

impl<T: Lit> Lit for Vec<T> {
    fn lit(&self, o: &mut String) {
        o.push_str("vec![");
        for (i, v) in self.iter().enumerate() {
            if i > 0 {
                o.push_str(", ");
            }
            v.lit(o);
        }
        o.push(']');
    }
}

/// A table: its rows one to a line.
struct Rows<'a, T>(&'a [T]);

impl<T: Lit> Lit for Rows<'_, T> {
    fn lit(&self, o: &mut String) {
        o.push_str("vec![");
        for v in self.0 {
            o.push_str("\n        ");
            v.lit(o);
            o.push(',');
        }
        o.push_str("\n    ]");
    }
}

impl Lit for CudaVersion {
    fn lit(&self, o: &mut String) {
        let CudaVersion { major, minor } = self;
        let _ = write!(o, "CudaVersion {{ major: {major}, minor: {minor} }}");
    }
}

impl Lit for Cc {
    fn lit(&self, o: &mut String) {
        let Cc { major, minor } = self;
        let _ = write!(o, "Cc {{ major: {major}, minor: {minor} }}");
    }
}

impl Lit for DriverVersion {
    fn lit(&self, o: &mut String) {
        let _ = write!(
            o,
            "DriverVersion::from_parts(&{:?}, {:?})",
            self.parts(),
            self.as_str()
        );
    }
}

impl Lit for Status {
    fn lit(&self, o: &mut String) {
        o.push_str(match self {
            Status::Nv => "Status::Nv",
            Status::X => "Status::X",
            Status::ThirdParty => "Status::ThirdParty",
            Status::Unconfirmed => "Status::Unconfirmed",
        });
    }
}

/// `impl Lit` for a struct of public fields, written as `Name { field: value, … }`.
macro_rules! lit_struct {
    ($($t:ident { $($f:ident),* $(,)? })*) => {$(
        impl Lit for $t {
            fn lit(&self, o: &mut String) {
                let $t { $($f),* } = self;
                o.push_str(concat!(stringify!($t), " {"));
                $(
                    o.push_str(concat!(" ", stringify!($f), ": "));
                    $f.lit(o);
                    o.push(',');
                )*
                o.push_str(" }");
            }
        }
    )*};
}

lit_struct! {
    Row { source, status, note, line }
    ToolkitRow { cuda, release, label, linux_min, windows_min, row }
    MinorCompat { major, linux_min, windows_min, row }
    BranchRow { branch, cuda, row }
    PtxRow { isa, cuda, branch, new_targets, row }
    TargetsRow { cuda, min_sm, max_sm, removed, added, row }
    Family { name, members, row }
    Tegra { ccs, row }
    TegraSoc { soc, name, cc, row }
    JetpackRow { jetpack, l4t, cuda, socs, cuda_compat, row }
    ArchRow { name, ccs, first_cuda, last_cuda, last_branch, row }
    GpuRow { names, cc, pci_ids, row }
    FwdPackage { package, cuda, compatible_bases, own_branch, row }
    ForwardCompat { supported_gpus, package_pattern, install_dir, row }
    FeatureRow { name, what, min_cuda, row }
    CudaErrorRow { value, name, driver_name, message, meaning, findings, row }
    MessageRow { pattern, example, meaning, findings, row }
}

/// The source of `fn matrix() -> Matrix` (and one function per table), for `include!` in
/// `src/matrix/load.rs`, whose `compiled` module imports the model's types.
pub fn rust(m: &Matrix) -> String {
    let Matrix {
        origin,
        sources,
        version,
        date,
        no_toolkit_release,
        toolkits,
        minor_compat,
        minor_compat_limits,
        minor_compat_limits_source,
        branches,
        ptx,
        targets,
        families,
        tegra,
        tegra_socs,
        jetpacks,
        archs,
        gpus,
        forward_compat,
        fwd_packages,
        features,
        errors,
        messages,
    } = m;
    let mut fns = String::new();
    let mut body = String::from("        sources: sources(),\n");
    let mut map = String::from("BTreeMap::from([");
    for (k, v) in sources {
        let _ = write!(map, "\n        (s({k:?}), s({v:?})),");
    }
    let _ = write!(
        fns,
        "\nfn sources() -> BTreeMap<String, String> {{\n    {map}\n    ])\n}}\n"
    );
    let mut field = |name: &str, ty: &str, v: &dyn Lit| {
        let mut value = String::new();
        v.lit(&mut value);
        let _ = write!(fns, "\nfn {name}() -> {ty} {{\n    {value}\n}}\n");
        let _ = writeln!(body, "        {name}: {name}(),");
    };
    field("origin", "String", origin);
    field("version", "Option<String>", version);
    field("date", "Option<String>", date);
    field(
        "no_toolkit_release",
        "Vec<CudaVersion>",
        &Rows(no_toolkit_release),
    );
    field("toolkits", "Vec<ToolkitRow>", &Rows(toolkits));
    field("minor_compat", "Vec<MinorCompat>", &Rows(minor_compat));
    field("minor_compat_limits", "Vec<String>", &Rows(minor_compat_limits));
    field("minor_compat_limits_source", "String", minor_compat_limits_source);
    field("branches", "Vec<BranchRow>", &Rows(branches));
    field("ptx", "Vec<PtxRow>", &Rows(ptx));
    field("targets", "Vec<TargetsRow>", &Rows(targets));
    field("families", "Vec<Family>", &Rows(families));
    field("tegra", "Tegra", tegra);
    field("tegra_socs", "Vec<TegraSoc>", &Rows(tegra_socs));
    field("jetpacks", "Vec<JetpackRow>", &Rows(jetpacks));
    field("archs", "Vec<ArchRow>", &Rows(archs));
    field("gpus", "Vec<GpuRow>", &Rows(gpus));
    field("forward_compat", "ForwardCompat", forward_compat);
    field("fwd_packages", "Vec<FwdPackage>", &Rows(fwd_packages));
    field("features", "Vec<FeatureRow>", &Rows(features));
    field("errors", "Vec<CudaErrorRow>", &Rows(errors));
    field("messages", "Vec<MessageRow>", &Rows(messages));
    format!(
        "// Written by build.rs (build/compat.rs) from data/compat.toml.\n\n\
         fn s(text: &str) -> String {{\n    text.to_string()\n}}\n\n\
         /// The bundled matrix.\n\
         pub(super) fn matrix() -> Matrix {{\n    Matrix {{\n{body}    }}\n}}\n{fns}"
    )
}

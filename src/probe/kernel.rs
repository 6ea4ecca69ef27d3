//! The self-test kernel: a tiny PTX text embedded in cudadiag, JIT-compiled by the driver on the spot.
//!
//! PTX rather than SASS so that one text runs on every GPU the driver supports (the driver compiles it for the
//! device at hand). The ISA is kept as low as the instructions allow, so old drivers can JIT it: PTX ISA 6.0
//! (CUDA 9.0, driver r384) with `.target sm_50`. Drivers of CUDA 13 no longer build code for GPUs below
//! sm_75, so a second variant declares `.target sm_75` (ISA 6.3, CUDA 10.0) in case the driver refuses the
//! older target; the probe records which variant loaded and why the others did not.
//!
//! Thread `i` of the grid writes `3 * i + 7` to `out[i]` for `i < n`: every element differs from zeroed or
//! stale memory, and a wrong grid or block index shows up as a wrong value.

/// The kernel's entry name.
pub const ENTRY: &str = "cudadiag_probe";
/// Threads per block of the launch.
pub const BLOCK: u32 = 128;
/// Blocks of the launch.
pub const GRID: u32 = 2;
/// Elements written (`GRID * BLOCK`).
pub const N: u32 = GRID * BLOCK;

const BODY: &str = r#"
.visible .entry cudadiag_probe(
	.param .u64 cudadiag_probe_out,
	.param .u32 cudadiag_probe_n
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [cudadiag_probe_out];
	ld.param.u32 	%r1, [cudadiag_probe_n];
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mov.u32 	%r4, %tid.x;
	mad.lo.s32 	%r5, %r2, %r3, %r4;
	setp.ge.u32 	%p1, %r5, %r1;
	@%p1 bra 	DONE;
	cvta.to.global.u64 	%rd2, %rd1;
	mul.wide.u32 	%rd3, %r5, 4;
	add.s64 	%rd4, %rd2, %rd3;
	mul.lo.s32 	%r6, %r5, 3;
	add.s32 	%r7, %r6, 7;
	st.global.u32 	[%rd4], %r7;
DONE:
	ret;
}
"#;

/// One variant of the kernel: PTX ISA version and target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    /// `.version`.
    pub isa: &'static str,
    /// `.target`.
    pub target: &'static str,
}

impl Variant {
    /// The NUL-terminated PTX text (the driver reads PTX as a C string).
    pub fn text(&self) -> Vec<u8> {
        let mut s = format!(
            "//\n// cudadiag live probe self-test kernel\n//\n.version {}\n.target {}\n.address_size 64\n{BODY}",
            self.isa, self.target
        )
        .into_bytes();
        s.push(0);
        s
    }

    /// `PTX ISA 6.0, sm_50`.
    pub fn label(&self) -> String {
        format!("PTX ISA {}, {}", self.isa, self.target)
    }
}

/// The variants, tried in order until the driver loads one.
pub const VARIANTS: &[Variant] = &[
    Variant {
        isa: "6.0",
        target: "sm_50",
    },
    Variant {
        isa: "6.3",
        target: "sm_75",
    },
];

/// What element `i` must hold after the kernel ran.
pub fn expected(i: u32) -> u32 {
    i.wrapping_mul(3).wrapping_add(7)
}

/// Checks the kernel's output: `None` when right, else what was wrong (first bad element, how many).
pub fn verify(out: &[u32]) -> Option<String> {
    if out.len() != N as usize {
        return Some(format!("read back {} elements, expected {N}", out.len()));
    }
    let bad: Vec<(usize, u32)> = out
        .iter()
        .enumerate()
        .filter(|&(i, &v)| u32::try_from(i).map_or(true, |i| v != expected(i)))
        .map(|(i, &v)| (i, v))
        .collect();
    let (i, v) = *bad.first()?;
    Some(format!(
        "{} of {N} elements wrong; out[{i}] = {v}, expected {}",
        bad.len(),
        u32::try_from(i).map_or(0, expected)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_nul_terminated_and_names_its_variant() {
        for v in VARIANTS {
            let t = v.text();
            assert_eq!(t.last(), Some(&0));
            let s = String::from_utf8_lossy(&t[..t.len() - 1]).to_string();
            assert!(s.contains(&format!(".version {}\n", v.isa)));
            assert!(s.contains(&format!(".target {}\n", v.target)));
            assert!(s.contains(&format!(".entry {ENTRY}(")));
            assert!(!s.contains('\0'));
        }
    }

    #[test]
    fn verify_accepts_only_the_expected_pattern() {
        let good: Vec<u32> = (0..N).map(expected).collect();
        assert_eq!(verify(&good), None);
        let mut bad = good.clone();
        bad[200] = 0;
        let msg = verify(&bad).unwrap_or_default();
        assert!(msg.contains("out[200] = 0, expected 607"), "{msg}");
        assert!(verify(&vec![0; N as usize]).is_some());
        assert!(verify(&good[..10]).is_some());
    }
}

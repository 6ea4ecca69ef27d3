//! Bad input is a finding, never a crash (`docs/untrusted-input.md`). Every malformed case is built by the
//! test-side writers in `support/`, changing one field of an otherwise valid fatbin; each must give a
//! `malformed-device-code` problem at the right place and a correct report of everything else. A mutation test
//! then damages the real fixtures thousands of times.

use crate::support;

use cudadiag::facts::{BinaryFacts, Compression, ProblemKind};
use cudadiag::inspect::{self, Depth, InspectOptions};
use support::*;

const LIMIT: u64 = 64 << 20;

fn deep() -> InspectOptions {
    InspectOptions {
        depth: Depth::Full,
        max_decompressed: LIMIT,
        ..InspectOptions::default()
    }
}

fn read(bytes: &[u8], opts: &InspectOptions) -> BinaryFacts {
    let mut v = inspect::bytes("t", bytes, opts);
    assert_eq!(v.len(), 1);
    v.remove(0)
}

fn archs(b: &BinaryFacts) -> Vec<String> {
    b.device_code.iter().map(|e| e.arch.clone()).collect()
}

fn device_problems(b: &BinaryFacts) -> Vec<String> {
    b.problems
        .iter()
        .filter(|p| p.kind == ProblemKind::DeviceCode)
        .map(|p| p.message.clone())
        .collect()
}

fn good_entries() -> Vec<Entry> {
    vec![
        Entry::new(
            ELF,
            80,
            cubin(80, "Cuda compilation tools, release 13.0, V13.0.88"),
        ),
        Entry::zstd(PTX, 90, &ptx_text("9.0", "sm_90")),
        Entry::lz4(
            ELF,
            90,
            &cubin(90, "Cuda compilation tools, release 13.0, V13.0.88"),
        ),
    ]
}

#[test]
fn valid_synthetic_fatbin_reads_fully() {
    for raw in [
        container(&good_entries(), None),
        host_with_fatbin(container(&good_entries(), None)),
    ] {
        let b = read(&raw, &deep());
        assert!(b.problems.is_empty(), "{:?}", b.problems);
        assert_eq!(archs(&b), ["sm_80", "compute_90", "sm_90"]);
        assert_eq!(b.device_code[1].compression, Compression::Zstd);
        assert_eq!(
            b.device_code[1].ptx.as_ref().unwrap().version.as_deref(),
            Some("9.0")
        );
        assert_eq!(b.device_code[2].compression, Compression::Lz4);
        assert_eq!(b.device_code[2].toolkit.as_deref(), Some("13.0.88"));
    }
}

#[test]
fn truncated_container_keeps_the_entries_before_the_cut() {
    let full = container(&good_entries(), None);
    let second_entry_end = 16 + good_entries()[0].bytes().len() + good_entries()[1].bytes().len();
    let cut = &full[..second_entry_end + 10];
    let b = read(&host_with_fatbin(cut.to_vec()), &deep());
    assert_eq!(archs(&b), ["sm_80", "compute_90"]);
    let p = device_problems(&b);
    assert!(p.iter().any(|m| m.contains("truncated")), "{p:?}");
}

#[test]
fn entry_payload_past_the_container_end() {
    let mut e = good_entries();
    e[2].payload_size = Some(1 << 40);
    let b = read(&container(&e, None), &deep());
    assert_eq!(&archs(&b)[..2], ["sm_80", "compute_90"]);
    assert!(
        device_problems(&b)
            .iter()
            .any(|m| m.contains("only") && m.contains("remain")),
        "{:?}",
        b.problems
    );
}

#[test]
fn unknown_kind_is_skipped_and_the_walk_goes_on() {
    let mut e = good_entries();
    e[1].kind = 0x40;
    let b = read(&container(&e, None), &deep());
    assert_eq!(archs(&b), ["sm_80", "sm_90"]);
    assert!(device_problems(&b).iter().any(|m| m.contains("unknown kind 64")));
}

#[test]
fn corrupt_compressed_payloads() {
    // zstd with a broken body.
    let mut e = good_entries();
    let len = e[1].payload.len();
    for b in &mut e[1].payload[8..len - 4] {
        *b ^= 0x5a;
    }
    let b = read(&container(&e, None), &deep());
    assert_eq!(archs(&b), ["sm_80", "compute_90", "sm_90"]);
    assert!(
        device_problems(&b)
            .iter()
            .any(|m| m.contains("compute_90") && m.contains("zstd")),
        "{:?}",
        b.problems
    );
    // zstd without its magic is caught without decompressing (default depth).
    let mut e = good_entries();
    e[1].payload[0] = 0;
    let b = read(&container(&e, None), &InspectOptions::default());
    assert!(device_problems(&b).iter().any(|m| m.contains("frame magic")));
    // LZ4 garbage.
    let mut e = good_entries();
    e[2].payload = vec![0xff; e[2].payload.len()];
    let b = read(&container(&e, None), &deep());
    assert!(
        device_problems(&b).iter().any(|m| m.contains("LZ4")),
        "{:?}",
        b.problems
    );
}

#[test]
fn decompression_bomb_is_refused_before_allocation() {
    let mut e = good_entries();
    e[1].uncompressed_size = 1 << 44; // 16 TiB declared
    let b = read(&container(&e, None), &deep());
    assert_eq!(archs(&b), ["sm_80", "compute_90", "sm_90"]);
    assert!(device_problems(&b).iter().any(|m| m.contains("over the limit")));
    // Declared smaller than the real content: refused too.
    let mut e = good_entries();
    e[2].uncompressed_size = 16;
    let b = read(&container(&e, None), &deep());
    assert!(
        device_problems(&b)
            .iter()
            .any(|m| m.contains("sm_90") && m.contains("LZ4")),
        "{:?}",
        b.problems
    );
}

#[test]
fn overlapping_entries() {
    // The first entry declares a payload shorter than it is: the next "header" lands inside its payload.
    let mut e = good_entries();
    e[0].payload_size = Some(64);
    let b = read(&container(&e, None), &deep());
    assert!(!device_problems(&b).is_empty());
    assert_eq!(b.device_code[0].arch, "sm_80");
}

#[test]
fn zero_sizes() {
    // Empty payload.
    let mut e = good_entries();
    e[0].payload = Vec::new();
    let b = read(&container(&e, None), &deep());
    assert!(device_problems(&b).iter().any(|m| m.contains("empty payload")));
    assert_eq!(archs(&b), ["compute_90", "sm_90"]);
    // Header size 0.
    let mut e = good_entries();
    e[1].header_size = 0;
    let raw = container(&e, None);
    let b = read(&raw, &deep());
    assert_eq!(archs(&b), ["sm_80"]);
    assert!(!device_problems(&b).is_empty());
    // A container declaring no entries, followed by a good one.
    let mut raw = container(&[], None);
    raw.extend(container(&good_entries(), None));
    let b = read(&raw, &deep());
    assert_eq!(b.fatbins.len(), 2);
    assert_eq!(archs(&b).len(), 3);
}

#[test]
fn garbage_between_containers_resumes_at_the_next_magic() {
    let mut raw = container(&good_entries()[..1], None);
    raw.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4]);
    raw.extend(container(&good_entries()[1..], None));
    let b = read(&host_with_fatbin(raw), &deep());
    assert_eq!(archs(&b), ["sm_80", "compute_90", "sm_90"]);
    assert!(device_problems(&b).iter().any(|m| m.contains("resuming")));
}

#[test]
fn damaged_cubin_inside_a_good_entry() {
    let mut e = good_entries();
    e[0].payload = b"\x7fELF but not really an elf file at all, no, not one bit of it......".to_vec();
    let b = read(&container(&e, None), &deep());
    assert_eq!(archs(&b), ["sm_80", "compute_90", "sm_90"]);
    assert!(device_problems(&b).iter().any(|m| m.starts_with("sm_80")));
}

#[test]
fn corrupt_host_elf_is_a_binary_problem() {
    let mut raw = host_with_fatbin(container(&good_entries(), None));
    // Section header table offset far past the end.
    raw[0x28..0x30].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let b = read(&raw, &deep());
    assert!(b.problems.iter().any(|p| p.kind == ProblemKind::Binary));
    // Not ELF, not a fatbin: unrecognized.
    let b = read(b"hello world, this is text", &deep());
    assert!(b.problems.iter().any(|p| p.kind == ProblemKind::Unrecognized));
}

/// Offsets of the fatbin sections of a real fixture.
fn fatbin_span(raw: &[u8]) -> (usize, usize) {
    let b = read(raw, &InspectOptions::default());
    let start = b.fatbins.iter().map(|c| c.offset as usize).min().unwrap();
    let end = b
        .fatbins
        .iter()
        .map(|c| (c.offset + c.size) as usize)
        .max()
        .unwrap();
    (start, end)
}

/// Damages real fixtures thousands of times: never a panic, and every entry that lies wholly before the first
/// damaged byte is still reported exactly as before.
#[test]
fn mutated_real_fixtures_never_panic_and_keep_the_undamaged_prefix() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cuda13");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut runs = 0;
    for name in [
        "multi",
        "compress_size",
        "compress_speed",
        "rdc",
        "kern.fatbin",
        "debug",
    ] {
        let original = std::fs::read(dir.join(name)).unwrap();
        let base = read(&original, &deep());
        let (start, end) = fatbin_span(&original);
        let iterations = if name == "kern.fatbin" { 1500 } else { 400 };
        for i in 0..iterations {
            let mut raw = original.clone();
            let flips = 1 + rng.below(4);
            let mut first = usize::MAX;
            for _ in 0..flips {
                // Mostly inside the fatbin; sometimes anywhere (ELF headers, section table).
                let at = if i % 10 == 0 {
                    rng.below(raw.len())
                } else {
                    start + rng.below(end - start)
                };
                let value = match rng.below(4) {
                    0 => 0,
                    1 => 0xff,
                    _ => rng.next() as u8,
                };
                if raw[at] != value {
                    raw[at] = value;
                    first = first.min(at);
                }
            }
            let b = read(&raw, &deep());
            runs += 1;
            if first < start {
                continue;
            }
            for e in base
                .device_code
                .iter()
                .filter(|e| (e.offset + 64 + e.stored_size) as usize <= first)
            {
                let c = &base.fatbins[e.container];
                if c.offset as usize + 16 > first {
                    continue;
                }
                let same = b.device_code.iter().find(|m| m.offset == e.offset);
                assert!(
                    same.is_some_and(|m| m.arch == e.arch && m.kind == e.kind && m.size == e.size),
                    "{name}: mutation at 0x{first:x} lost the entry at 0x{:x}",
                    e.offset
                );
            }
        }
    }
    assert!(runs >= 3000);
}

/// Unusual layouts: a container outside the usual sections, reached through a `.nvFatBinSegment` wrapper, and
/// one reached only by the fallback magic scan.
#[test]
fn containers_found_through_wrappers_and_by_scan() {
    // Wrapper: the container sits in `.rodata`, the wrapper points at its address.
    let fatbin = container(&good_entries(), None);
    let mut spec = ElfSpec::host(vec![(".rodata", {
        let mut v = vec![0u8; 8];
        v.extend(&fatbin);
        v
    })]);
    spec.addresses = true;
    let addr = section_offset(&spec, 0) + 8;
    spec.sections
        .push((".nvFatBinSegment".into(), SHT_PROGBITS, wrapper(1, addr)));
    let b = read(&spec.bytes(), &deep());
    assert_eq!(archs(&b), ["sm_80", "compute_90", "sm_90"]);
    assert_eq!(b.fatbins[0].section.as_deref(), Some(".rodata"));
    assert!(!b.fatbins[0].found_by_scan);
    assert!(b.problems.is_empty(), "{:?}", b.problems);

    // A wrapper pointing at nothing is reported.
    let mut spec = ElfSpec::host(vec![(".rodata", vec![0u8; 64])]);
    spec.addresses = true;
    let addr = section_offset(&spec, 0) + 8;
    spec.sections
        .push((".nvFatBinSegment".into(), SHT_PROGBITS, wrapper(1, addr)));
    let b = read(&spec.bytes(), &deep());
    assert!(
        device_problems(&b)
            .iter()
            .any(|m| m.contains("no fatbin container")),
        "{:?}",
        b.problems
    );

    // No fatbin sections and a wrapper whose pointer a relocation would fill (0 here): the bounded scan finds
    // the magic in a data section.
    let mut data = vec![0x11u8; 40];
    data.extend(&fatbin);
    let b = read(
        &ElfSpec::host(vec![
            (".data.custom", data.clone()),
            (".nvFatBinSegment", wrapper(1, 0)),
        ])
        .bytes(),
        &deep(),
    );
    assert_eq!(archs(&b), ["sm_80", "compute_90", "sm_90"]);
    assert!(b.fatbins[0].found_by_scan);
    // The near miss: a file that shows no sign of being a CUDA program is not scanned.
    let b = read(&ElfSpec::host(vec![(".data.custom", data)]).bytes(), &deep());
    assert!(b.device_code.is_empty());
}

/// Issue 32: `libtorch_cpu.so` links `libcudart.so` and registers no fatbin, and the fallback magic scan read
/// 49 MB of it (a quarter of a default `inspect` of PyTorch) to find nothing. Linking the runtime is no reason to
/// scan; importing `__cudaRegisterFatBinary` still is. Both libraries here carry a container in `.rodata` and
/// need `libcudart.so.13`; only the one that registers fatbins is scanned.
#[test]
fn a_library_that_links_cudart_without_registering_fatbins_is_not_scanned() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let cudart = loader_build::lib_from(
        dir,
        "libcudart.so.13",
        "void **__cudaRegisterFatBinary(void *f) { return (void **)f; }\n",
        &[],
        &[],
    );
    let bytes: Vec<String> = container(&good_entries(), None)
        .iter()
        .map(|b| b.to_string())
        .collect();
    let blob = format!(
        "__attribute__((aligned(8))) const unsigned char blob[] = {{{}}};\n",
        bytes.join(",")
    );
    let read_lib = |name: &str, extra: &str| {
        let lib = loader_build::lib_from(dir, name, &format!("{blob}{extra}"), &[&cudart], &[]);
        read(&std::fs::read(lib).unwrap(), &deep())
    };
    let links = read_lib("liblinks.so", "int f(void) { return blob[0]; }\n");
    assert!(
        links
            .elf
            .as_ref()
            .is_some_and(|e| e.needed.iter().any(|n| n == "libcudart.so.13"))
    );
    assert!(links.device_code.is_empty(), "{:?}", archs(&links));
    assert!(links.fatbins.is_empty());
    // The near miss: the same library calling the registration function is scanned, and the container found.
    let registers = read_lib(
        "libregisters.so",
        "void **__cudaRegisterFatBinary(void *);\nvoid **f(void) { return __cudaRegisterFatBinary((void *)blob); }\n",
    );
    assert_eq!(archs(&registers), ["sm_80", "compute_90", "sm_90"]);
    assert!(registers.fatbins[0].found_by_scan);
}

/// Issue 19, case 4: an 8 KB fatbin whose zstd entry inflates to 256 MiB cost 256 MiB and 0.25 s without
/// `--deep` (the toolkit sample inflated it whole). Now nothing is inflated, and the entry says why.
#[test]
fn a_zstd_bomb_is_not_inflated_for_the_toolkit_sample() {
    let bomb = container(&[Entry::zstd_bomb(ELF, 90, 0, 256 << 20)], None);
    assert!(bomb.len() < 9_000, "{}", bomb.len());
    let opts = InspectOptions::default();
    let b = read(&bomb, &opts);
    assert_eq!(opts.budget.stats().inflations, 0);
    assert_eq!(opts.budget.stats().bytes, 0);
    let e = &b.device_code[0];
    assert_eq!((e.size, e.toolkit.as_deref()), (256 << 20, None));
    assert!(
        e.unread
            .as_deref()
            .is_some_and(|w| w.contains("toolkit not read")),
        "{e:?}"
    );
    assert!(b.problems.is_empty(), "{:?}", b.problems);
    // Near miss: a small compressed cubin is still sampled for its toolkit.
    let small = container(
        &[Entry::zstd(
            ELF,
            90,
            &cubin(90, "Cuda compilation tools, release 13.0, V13.0.88"),
        )],
        None,
    );
    let opts = InspectOptions::default();
    let b = read(&small, &opts);
    assert_eq!(opts.budget.stats().inflations, 1);
    assert_eq!(b.device_code[0].toolkit.as_deref(), Some("13.0.88"));
    assert_eq!(b.device_code[0].unread, None);
}

/// Issue 19, case 4: 200 copies of a bomb in a directory took 49 s to audit. One run reads each distinct
/// payload once, with or without `--deep`.
#[test]
fn two_hundred_copies_of_one_payload_inflate_once() {
    let bomb = container(&[Entry::zstd_bomb(ELF, 90, 0, 8 << 20)], None);
    let opts = deep();
    for i in 0..200 {
        let b = read(&bomb, &opts);
        assert_eq!(device_problems(&b).len(), 1, "copy {i}: {:?}", b.problems); // zeros are no cubin
    }
    let s = opts.budget.stats();
    assert_eq!((s.inflations, s.reused, s.bytes), (1, 199, 8 << 20));
    let good = container(
        &[Entry::zstd(
            ELF,
            90,
            &cubin(90, "Cuda compilation tools, release 13.0, V13.0.88"),
        )],
        None,
    );
    let opts = InspectOptions::default();
    for _ in 0..200 {
        assert_eq!(
            read(&good, &opts).device_code[0].toolkit.as_deref(),
            Some("13.0.88")
        );
    }
    assert_eq!(
        (opts.budget.stats().inflations, opts.budget.stats().reused),
        (1, 199)
    );
}

/// Issue 19, case 4: the run's budget bounds what `--deep` inflates in all; what is left is reported as not
/// read, not as damage.
#[test]
fn a_spent_decompression_budget_leaves_entries_unread_not_damaged() {
    let two = container(
        &[
            Entry::zstd_bomb(ELF, 90, 0, 8 << 20),
            Entry::zstd_bomb(ELF, 80, 1, 8 << 20),
        ],
        None,
    );
    let opts = InspectOptions {
        budget: std::sync::Arc::new(inspect::budget::Budget::new(
            12 << 20,
            std::time::Duration::from_secs(60),
        )),
        ..deep()
    };
    let b = read(&two, &opts);
    let s = opts.budget.stats();
    assert_eq!((s.inflations, s.refused), (1, 1));
    let unread: Vec<_> = b.device_code.iter().filter_map(|e| e.unread.as_deref()).collect();
    assert_eq!(unread.len(), 1, "{:?}", b.device_code);
    assert!(
        unread[0].contains("decompression budget of 12582912 bytes"),
        "{unread:?}"
    );
    assert_eq!(device_problems(&b).len(), 1, "{:?}", b.problems); // only the one inflated: zeros, no cubin
}

//! The version constant `cudaRuntimeGetVersion` stores, read from AArch64 code.
//!
//! On AArch64 the runtime builds the constant in a `w` register and stores it through the caller's pointer:
//! CUDA 12.9's `libcudart.so.12` calls a small accessor that does `mov x1, x0; cbz x0, …; mov w2, #12090;
//! mov w0, #0; str w2, [x1]; ret`. A constant above 16 bits needs `movz` + `movk`; a compiler may also load
//! it from a literal pool (`ldr w2, =lit`) or, for a bitmask-shaped value, use `orr w2, wzr, #imm`.
//!
//! Instructions are fixed 32-bit little-endian words (Arm ARM, "A64 Instruction Set Encoding"). This is not a
//! disassembler: it follows the few instructions that put a constant in a register, forgets a register any
//! other instruction may write, forgets every register at a call, and reports the first `str wN, [xM…]` of a
//! plausible version. Every read is bounded; a literal pool address is read through the caller's `read`,
//! which checks it against the file.

/// A CUDA version as `cudaRuntimeGetVersion` encodes it (`12090` for 12.9): 9.0 to 99.99, a multiple of 10.
pub fn plausible(v: u32) -> bool {
    (9000..=99_990).contains(&v) && v.is_multiple_of(10)
}

/// The instruction word at byte `i` of `code`, if all four bytes are there.
fn word(code: &[u8], i: usize) -> Option<u32> {
    let b = code.get(i..i + 4)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// What one instruction does, as far as the constant is concerned. Registers are numbered 0–31 (31 is the
/// zero register or `sp`, by instruction); offsets are in bytes from the instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Insn {
    /// `movz`/`movn`/`orr wzr` (and the `mov` aliases): register `rd` gets `value`.
    Set { rd: u8, value: u64 },
    /// `movk`: bits `shift..shift+16` of `rd` become `imm`, the rest kept.
    Keep { rd: u8, imm: u16, shift: u8 },
    /// `ldr wN, <label>` (32-bit literal load) from `pc + offset`.
    Literal { rt: u8, offset: i64 },
    /// `str wN, [xM, …]` (32-bit store, any addressing form); `rn` 31 is `sp`.
    Store32 { rt: u8, rn: u8 },
    /// `bl` / `b` with its byte offset.
    Branch { link: bool, offset: i64 },
    /// `blr`, `br`, `ret` and other indirect branches: registers are unknown after it.
    Indirect,
    /// Any other instruction: it may write register `rd` (bits 0–4), and `rt2` for a load pair.
    Other { rd: u8, rt2: Option<u8> },
}

/// Decodes one A64 word into the little the reader needs.
pub fn decode(w: u32) -> Insn {
    let rd = (w & 31) as u8;
    let imm16 = u64::from((w >> 5) & 0xFFFF);
    let hw = ((w >> 21) & 3) as u8;
    let sf = w >> 31 == 1;
    // Move wide (immediate): sf opc 100101 hw imm16 Rd. 32-bit forms allow hw 0 and 1 only.
    if w & 0x1F80_0000 == 0x1280_0000 && (sf || hw < 2) {
        let shift = hw * 16;
        let width = if sf { u64::MAX } else { u64::from(u32::MAX) };
        return match (w >> 29) & 3 {
            0 => Insn::Set {
                rd,
                value: !(imm16 << shift) & width,
            },
            2 => Insn::Set {
                rd,
                value: imm16 << shift,
            },
            3 => Insn::Keep {
                rd,
                imm: imm16 as u16,
                shift,
            },
            _ => Insn::Other { rd, rt2: None },
        };
    }
    // ORR (immediate) with Rn = zr: the `mov wN, #bitmask` alias. sf 01 100100 N immr imms Rn Rd.
    if w & 0x7F80_0000 == 0x3200_0000 && (w >> 5) & 31 == 31 {
        let n = (w >> 22) & 1;
        if let Some(value) = bitmask(n, (w >> 16) & 63, (w >> 10) & 63, if sf { 64 } else { 32 }) {
            return Insn::Set { rd, value };
        }
        return Insn::Other { rd, rt2: None };
    }
    // LDR (literal), 32-bit: 00 011 0 00 imm19 Rt.
    if w & 0xFF00_0000 == 0x1800_0000 {
        let imm19 = ((w >> 5) & 0x7FFFF) as i64;
        let imm19 = (imm19 << 45) >> 45;
        return Insn::Literal {
            rt: rd,
            offset: imm19 * 4,
        };
    }
    // STR (immediate, unsigned offset), 32-bit: 1011 1001 00 imm12 Rn Rt.
    // STR/STUR (pre-, post-index, unscaled) and STR (register), 32-bit: 1011 1000 00 …
    if w & 0xFFC0_0000 == 0xB900_0000 || w & 0xFFE0_0000 == 0xB800_0000 || w & 0xFFE0_0C00 == 0xB820_0800 {
        return Insn::Store32 {
            rt: rd,
            rn: ((w >> 5) & 31) as u8,
        };
    }
    // B / BL: x00101 imm26.
    if w & 0x7C00_0000 == 0x1400_0000 {
        let imm26 = (w & 0x03FF_FFFF) as i64;
        return Insn::Branch {
            link: w >> 31 == 1,
            offset: ((imm26 << 38) >> 38) * 4,
        };
    }
    // Unconditional branch (register): BR, BLR, RET and their authenticated forms.
    if w & 0xFE00_0000 == 0xD600_0000 {
        return Insn::Indirect;
    }
    // Loads and stores: op0 x1x0. A store (L = 0 in bit 22 for the register forms) writes no register; a load,
    // or a pair load, writes Rt (and Rt2).
    if w & 0x0A00_0000 == 0x0800_0000 {
        if w & (1 << 22) == 0 {
            return Insn::Other { rd: 32, rt2: None };
        }
        let pair = w & 0x3A00_0000 == 0x2800_0000;
        return Insn::Other {
            rd,
            rt2: pair.then_some(((w >> 10) & 31) as u8),
        };
    }
    Insn::Other { rd, rt2: None }
}

/// ARM's `DecodeBitMasks` for a logical immediate of `width` bits (the Arm ARM pseudocode), `None` when the
/// fields are reserved.
pub fn bitmask(n: u32, immr: u32, imms: u32, width: u32) -> Option<u64> {
    let combined = (n << 6) | (!imms & 63);
    if combined == 0 {
        return None;
    }
    let len = 31 - combined.leading_zeros();
    if len < 1 || (n == 1 && width == 32) {
        return None;
    }
    let esize = 1u32 << len;
    let levels = esize - 1;
    let s = imms & levels;
    let r = immr & levels;
    if s == levels {
        return None;
    }
    let ones = (1u64 << (s + 1)) - 1;
    let emask = if esize == 64 {
        u64::MAX
    } else {
        (1u64 << esize) - 1
    };
    let elem = ((ones >> r) | (ones << ((esize - r) % esize))) & emask;
    let mut value = 0u64;
    let mut at = 0;
    while at < width {
        value |= elem << at;
        at += esize;
    }
    Some(if width == 32 { value & 0xFFFF_FFFF } else { value })
}

/// The first plausible version stored by a 32-bit `str` in `code` (starting at virtual address `addr`), with
/// its byte position in `code`; and the targets of the direct branches met on the way, for the caller to
/// follow. `literal` reads the 32-bit word at a virtual address (a literal pool), bounded by the caller.
pub fn stored_version(
    code: &[u8],
    addr: u64,
    literal: &dyn Fn(u64) -> Option<u32>,
) -> (Option<(u32, usize)>, Vec<u64>) {
    let mut regs: [Option<u64>; 32] = [None; 32];
    // Where each known register's value was set, for the evidence's file offset.
    let mut set_at = [0usize; 32];
    let mut branches = Vec::new();
    for i in (0..code.len()).step_by(4) {
        let Some(w) = word(code, i) else { break };
        let pc = addr.wrapping_add(i as u64);
        match decode(w) {
            Insn::Set { rd, value } => {
                regs[rd as usize] = (rd != 31).then_some(value);
                set_at[rd as usize] = i;
            }
            Insn::Keep { rd, imm, shift } => {
                let r = &mut regs[rd as usize];
                *r = r.map(|v| (v & !(0xFFFF << shift)) | (u64::from(imm) << shift));
                set_at[rd as usize] = i;
            }
            Insn::Literal { rt, offset } => {
                regs[rt as usize] = pc.checked_add_signed(offset).and_then(literal).map(u64::from);
                set_at[rt as usize] = i;
            }
            Insn::Store32 { rt, rn } => {
                if let Some(v) = regs[rt as usize].map(|v| v as u32)
                    && rn != 31
                    && plausible(v)
                {
                    return (Some((v, set_at[rt as usize])), branches);
                }
            }
            Insn::Branch { link, offset } => {
                branches.extend(pc.checked_add_signed(offset));
                if link {
                    regs = [None; 32];
                }
            }
            Insn::Indirect => regs = [None; 32],
            Insn::Other { rd, rt2 } => {
                if let Some(r) = regs.get_mut(rd as usize) {
                    *r = None;
                }
                if let Some(r) = rt2.and_then(|t| regs.get_mut(t as usize)) {
                    *r = None;
                }
            }
        }
    }
    (None, branches)
}

/// For stripped binaries: the runtime's version accessor by its shape, in 4-byte-aligned `code`. CUDA 12.9's
/// is `mov x1, x0; cbz x0, …; mov w2, #12090; mov w0, #0; str w2, [x1]; ret`: a `movz` of a plausible version
/// at most three words after a `cbz x0`, stored (through a register) at most three words later, then `ret`.
/// Returns the constant and the position of its `movz` in `code`.
pub fn accessor_in(code: &[u8]) -> Option<(u32, usize)> {
    const RET: u32 = 0xd65f_03c0;
    let words = code.len() / 4;
    (0..words).find_map(|k| {
        let w = word(code, 4 * k)?;
        // movz wN, #imm16 (no shift) of a plausible version.
        if w & 0xFFE0_0000 != 0x5280_0000 || !plausible((w >> 5) & 0xFFFF) {
            return None;
        }
        let cbz = (k.saturating_sub(3)..k)
            .find(|&j| word(code, 4 * j).is_some_and(|c| c & 0xFF00_001F == 0xB400_0000))?;
        let window = code.get(4 * cbz..(4 * (k + 8)).min(code.len()))?;
        let (v, at) = stored_version(window, 0, &|_| None).0?;
        let store = (4 * cbz + at) / 4;
        (store == k && (k + 1..k + 6).any(|j| word(code, 4 * j) == Some(RET))).then_some((v, 4 * k))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    const NO_LITERAL: &dyn Fn(u64) -> Option<u32> = &|_| None;

    /// CUDA 12.9's accessor in `libcudart.so.12` (aarch64 wheel `nvidia-cuda-runtime-cu12` 12.9.79, at
    /// 0x205e8), word for word.
    #[test]
    fn cuda_12_9_accessor() {
        let code = bytes(&[
            0xaa0003e1, // mov x1, x0
            0xb40000a0, // cbz x0, +0x14
            0x5285e742, // mov w2, #12090
            0x52800000, // mov w0, #0
            0xb9000022, // str w2, [x1]
            0xd65f03c0, // ret
        ]);
        assert_eq!(stored_version(&code, 0x205e8, NO_LITERAL).0, Some((12090, 8)));
    }

    #[test]
    fn movz_movk_and_movn() {
        // movz w3, #0x86a0 ; movk w3, #0x1, lsl #16 → 100000: not plausible (above 99990).
        let big = bytes(&[0x5290d403, 0x72a00023, 0xb9000003]);
        assert_eq!(stored_version(&big, 0, NO_LITERAL).0, None);
        // movz w3, #0 ; movk w3, #13000 → 13000, stored with an offset: str w3, [x0, #8].
        let k = bytes(&[0x52800003, 0x72865903, 0xb9000803]);
        assert_eq!(stored_version(&k, 0, NO_LITERAL).0, Some((13000, 4)));
        // movn w4, #0xcd2d is 0xffff32d2 in a w register: no version.
        assert_eq!(
            decode(0x1299a5a4),
            Insn::Set {
                rd: 4,
                value: 0xffff_32d2
            }
        );
        let n = bytes(&[0x1299a5a4, 0xb81fc004]);
        assert_eq!(stored_version(&n, 0, NO_LITERAL).0, None);
        // movz w4, #13010 ; stur w4, [x0, #-4] ; then the register and post-index forms are stores too.
        let u = bytes(&[0x52865a44, 0xb81fc004]);
        assert_eq!(stored_version(&u, 0, NO_LITERAL).0, Some((13010, 0)));
        for store in [0xb8236824u32, 0xb8004424] {
            let s = bytes(&[0x52865a44, store]);
            assert_eq!(
                stored_version(&s, 0, NO_LITERAL).0,
                Some((13010, 0)),
                "{store:#x}"
            );
        }
    }

    #[test]
    fn literal_pool() {
        // ldr w5, #8 (the word two instructions on) ; str w5, [x0] ; .word 12040
        let code = bytes(&[0x18000045, 0xb9000005, 12040]);
        let read = |a: u64| (a == 0x1008).then_some(12040);
        assert_eq!(stored_version(&code, 0x1000, &read).0, Some((12040, 0)));
        // A literal outside what the caller can read is no value.
        assert_eq!(stored_version(&code, 0x1000, NO_LITERAL).0, None);
    }

    #[test]
    fn a_register_overwritten_or_a_call_forgets_the_constant() {
        // mov w2, #12090 ; ldr w2, [x3] ; str w2, [x1]
        let load = bytes(&[0x5285e742, 0xb9400062, 0xb9000022]);
        assert_eq!(stored_version(&load, 0, NO_LITERAL).0, None);
        // mov w2, #12090 ; bl +8 ; str w2, [x1]: the call clobbers w2, and its target is returned.
        let call = bytes(&[0x5285e742, 0x94000002, 0xb9000022]);
        assert_eq!(stored_version(&call, 0x100, NO_LITERAL), (None, vec![0x10c]));
        // A store to the stack is a local, not the caller's int: str w2, [sp, #4].
        let stack = bytes(&[0x5285e742, 0xb90007e2]);
        assert_eq!(stored_version(&stack, 0, NO_LITERAL).0, None);
        // Half an instruction at the end is ignored.
        assert_eq!(stored_version(&[0x42, 0xe7, 0x85], 0, NO_LITERAL).0, None);
    }

    #[test]
    fn the_accessor_is_found_by_its_shape() {
        let accessor = [
            0xaa0003e1, 0xb40000a0, 0x5285e742, 0x52800000, 0xb9000022, 0xd65f03c0,
        ];
        let mut code = bytes(&[0xd503201f; 5]); // nops before
        code.extend(bytes(&accessor));
        assert_eq!(accessor_in(&code), Some((12090, 28)));
        // near miss: no `cbz x0` before the constant (the pointer is not checked: not the accessor).
        let mut other = accessor;
        other[1] = 0xb40000a1; // cbz x1
        assert_eq!(accessor_in(&bytes(&other)), None);
        // near miss: the constant is not stored.
        other = accessor;
        other[4] = 0xd503201f;
        assert_eq!(accessor_in(&bytes(&other)), None);
    }

    /// Any words, any length, any address: the reader returns (no overflow on branch or literal targets near
    /// the ends of the address space, no read past the slice).
    #[test]
    fn arbitrary_words_never_panic() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..2000 {
            let len = (next() % 67) as usize;
            let code: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let addr = [0, u64::MAX - 8, next()][round % 3];
            let _ = stored_version(&code, addr, &|a| Some(a as u32));
            let _ = accessor_in(&code);
            let w = next() as u32;
            let _ = decode(w);
            let _ = bitmask(
                w & 1,
                (w >> 1) & 63,
                (w >> 7) & 63,
                if w >> 31 == 1 { 64 } else { 32 },
            );
        }
    }

    #[test]
    fn bitmask_immediates() {
        // orr w1, wzr, #0xff (N=0 immr=0 imms=7)
        assert_eq!(bitmask(0, 0, 7, 32), Some(0xff));
        // orr w1, wzr, #0x7f80 (a run of 8 ones at bit 7: immr = 32-7 = 25, imms = 7)
        assert_eq!(bitmask(0, 25, 7, 32), Some(0x7f80));
        // 0x5555_5555: element size 2, one 1 bit.
        assert_eq!(bitmask(0, 0, 0b111100, 32), Some(0x5555_5555));
        // All ones is reserved.
        assert_eq!(bitmask(0, 0, 31, 32), None);
        assert_eq!(decode(0x321e1fe1), Insn::Set { rd: 1, value: 0x3fc });
    }
}

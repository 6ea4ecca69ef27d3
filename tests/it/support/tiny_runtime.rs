//! The smallest shared object with `cudaRuntimeGetVersion` in `.symtab`, which `inspect` reads as a libcudart.
//! One builder for the unit tests of `src/inspect/elf.rs` (which include this file with `#[path]`) and the
//! integration tests (`tests/it/host.rs`); it uses nothing but the standard library so that both can.

/// An ELF64 `ET_DYN` for `machine` whose `.text` (at address 0x1000) holds `text`, with one global function
/// symbol `cudaRuntimeGetVersion` covering its first `func_len` bytes; sections `.text`, `.symtab`, `.strtab`,
/// `.shstrtab` and no program headers.
pub fn tiny_runtime(machine: u16, text: &[u8], func_len: u64) -> Vec<u8> {
    let strtab = b"\0cudaRuntimeGetVersion\0".to_vec();
    let shstrtab = b"\0.text\0.symtab\0.strtab\0.shstrtab\0".to_vec();
    let text_off = 64u64;
    let sym_off = (text_off + text.len() as u64 + 7) & !7;
    let str_off = sym_off + 48;
    let shstr_off = str_off + strtab.len() as u64;
    let sh_off = (shstr_off + shstrtab.len() as u64 + 7) & !7;
    let mut b = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    b.extend_from_slice(&3u16.to_le_bytes()); // ET_DYN
    b.extend_from_slice(&machine.to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&0u64.to_le_bytes()); // entry
    b.extend_from_slice(&0u64.to_le_bytes()); // phoff
    b.extend_from_slice(&sh_off.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    for v in [64u16, 56, 0, 64, 5, 4] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(text);
    b.resize(sym_off as usize, 0);
    b.extend_from_slice(&[0; 24]); // null symbol
    b.extend_from_slice(&1u32.to_le_bytes()); // name
    b.extend_from_slice(&[0x12, 0]); // GLOBAL FUNC
    b.extend_from_slice(&1u16.to_le_bytes()); // .text
    b.extend_from_slice(&0x1000u64.to_le_bytes());
    b.extend_from_slice(&func_len.to_le_bytes());
    b.extend_from_slice(&strtab);
    b.extend_from_slice(&shstrtab);
    b.resize(sh_off as usize, 0);
    let mut sh = |name: u32, ty: u32, flags: u64, addr: u64, off: u64, size: u64, link: u32, info: u32| {
        b.extend_from_slice(&name.to_le_bytes());
        b.extend_from_slice(&ty.to_le_bytes());
        for v in [flags, addr, off, size] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&link.to_le_bytes());
        b.extend_from_slice(&info.to_le_bytes());
        b.extend_from_slice(&1u64.to_le_bytes());
        b.extend_from_slice(&(if ty == 2 { 24u64 } else { 0 }).to_le_bytes());
    };
    sh(0, 0, 0, 0, 0, 0, 0, 0);
    sh(1, 1, 6, 0x1000, text_off, text.len() as u64, 0, 0);
    sh(7, 2, 0, 0, sym_off, 48, 3, 1);
    sh(15, 3, 0, 0, str_off, strtab.len() as u64, 0, 0);
    sh(23, 3, 0, 0, shstr_off, shstrtab.len() as u64, 0, 0);
    b
}

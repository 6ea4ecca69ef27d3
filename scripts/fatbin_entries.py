#!/usr/bin/env python3
"""Print the raw fatbin entry headers of ELF files or raw .fatbin files (an independent,
dependency-free reading of docs/fatbin-format.md, "Entry header", for cross-checking cudadiag).

    fatbin_entries.py FILE...

One line per entry: section, container index, kind, arch, fatbin flags, compression, entry
header size, padded/compressed/uncompressed sizes, code version, identifier.  Static archives
are not handled (extract members with `ar x` first).
"""

from __future__ import annotations

import struct
import sys

KINDS = {1: "ptx", 2: "elf", 4: "oldcubin", 8: "nvvm"}
SECTIONS = (b".nv_fatbin", b"__nv_relfatbin")


def elf_sections(b: bytes):
    if b[4] != 2 or b[5] != 1:
        return []
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
    secs = []
    for i in range(shnum):
        secs.append(struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize))
    stroff = secs[shstrndx][4]
    out = []
    for s in secs:
        name = b[stroff + s[0]:b.index(b"\0", stroff + s[0])]
        if name in SECTIONS and s[1] != 8:  # not NOBITS
            out.append((name.decode(), s[4], s[5]))
    return out


def walk(data: bytes, label: str):
    pos, ci = 0, 0
    while pos + 16 <= len(data):
        magic, ver, hsz, fsz = struct.unpack_from("<IHHQ", data, pos)
        if magic != 0xBA55ED50:
            nxt = pos + 8
            while nxt + 4 <= len(data) and struct.unpack_from("<I", data, nxt)[0] != 0xBA55ED50:
                nxt += 8
            if nxt + 4 > len(data):
                break
            pos = nxt
            continue
        e, end = pos + hsz, pos + hsz + fsz
        while e + 64 <= end:
            (kind, _ev, ehs, padded, csize, _aux, minor, major, arch, idoff, idlen, flags, _r,
             usize) = struct.unpack_from("<HHIQIIHHIIIQQQ", data, e)
            comp = "zstd" if flags & 0x8000 else "lz4" if flags & 0x2000 else \
                   "0x1000?" if flags & 0x1000 else "none"
            suffix = "a" if flags & 0x100000 else "f" if flags & 0x200000 else ""
            ident = data[e + idoff:e + idoff + idlen].rstrip(b"\0").decode("latin-1") if idlen else ""
            print(f"{label:16s} c{ci:<3d} {KINDS.get(kind, kind)!s:5s} {arch:>4d}{suffix:1s} "
                  f"flags=0x{flags:08x} {comp:5s} hdr={ehs:<3d} padded={padded:<7d} "
                  f"csize={csize:<7d} usize={usize:<7d} ver={major}.{minor}"
                  + (f" id={ident}" if ident else ""))
            if ehs == 0 or padded == 0 and csize == 0:
                break
            e += ehs + padded
        pos, ci = end, ci + 1


def main() -> int:
    for path in sys.argv[1:]:
        b = open(path, "rb").read()
        print(f"# {path}")
        if b[:4] == b"\x7fELF":
            for name, off, size in elf_sections(b):
                walk(b[off:off + size], name)
        elif b[:4] == b"\x50\xed\x55\xba":
            walk(b, "(raw fatbin)")
        else:
            print("  not an ELF or fatbin file")
    return 0


if __name__ == "__main__":
    sys.exit(main())

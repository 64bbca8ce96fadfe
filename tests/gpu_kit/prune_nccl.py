#!/usr/bin/env python3
"""Zero the device code of every GPU architecture but the ones kept in a copy of libnccl.so.2.

    prune_nccl.py SRC [DST] [--keep 90]     (no DST: only report what it would keep and zero)

NCCL's wheel holds its kernels for sm_75 to sm_120 (and PTX) in two ELF sections, .nv_fatbin and
__nv_relfatbin: about 200 of its 250 MB. A GPU machine that can take only 64 MiB of files (make gpu-carry)
needs one architecture's: this writes DST with every other entry's payload zeroed, leaving every offset,
size and header in place, so that the file compresses to about 47 MB and the CUDA driver, which picks the
entry of the GPU's architecture by its header, loads the same cubin it would from the original.

A fatbin is a header {u32 magic 0xBA55ED50, u16 version, u16 header size, u64 size of the entries}
followed by entries {u16 kind (1 PTX, 2 ELF), u16 version, u32 header size, u64 payload size, ...,
u32 sm at offset 28, ...}, each followed by its payload. Several fatbins lie back to back in a section.

Prints what it kept and zeroed. Exit status 1, with the reason, when SRC has no fatbin section, none of the
kept architectures is in it, or a fatbin's layout does not parse (a new format: read it before trusting it).
"""

import argparse
import collections
import struct
import sys

MAGIC = 0xBA55ED50


def sections(elf):
    """(name, offset, size) of the ELF64 little-endian sections whose name mentions 'fatbin' (not the segment)."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    (shoff,) = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)

    def header(i):
        return struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize)

    strtab = header(shstrndx)
    names_at = strtab[4]
    for i in range(shnum):
        name_off, kind, _, _, offset, size = header(i)[:6]
        end = elf.index(b"\0", names_at + name_off)
        name = elf[names_at + name_off : end].decode()
        if "fatbin" in name.lower() and "segment" not in name.lower() and kind != 8:  # 8: NOBITS
            yield name, offset, size


def entries(elf, offset, size):
    """(payload offset, payload size, kind, sm) of every entry of every fatbin in a section."""
    at, end = offset, offset + size
    while at + 16 <= end:
        magic, _, header_size, fat_size = struct.unpack_from("<IHHQ", elf, at)
        if magic != MAGIC:  # padding between fatbins
            at += 8
            continue
        entry, stop = at + header_size, at + header_size + fat_size
        if stop > end:
            raise ValueError(f"a fatbin at {at:#x} runs past its section")
        while entry < stop:
            kind, _, entry_header, payload = struct.unpack_from("<HHIQ", elf, entry)
            (sm,) = struct.unpack_from("<I", elf, entry + 28)
            if entry_header < 32 or entry + entry_header + payload > stop:
                raise ValueError(f"an entry at {entry:#x} does not fit its fatbin")
            yield entry + entry_header, payload, kind, sm
            entry += entry_header + payload
        at = stop


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src")
    parser.add_argument("dst", nargs="?")
    parser.add_argument("--keep", type=int, action="append", help="an sm to keep (90 for H100/H200); repeatable")
    args = parser.parse_args()
    keep = set(args.keep or [90])
    elf = bytearray(open(args.src, "rb").read())
    kept, zeroed = collections.Counter(), collections.Counter()
    found = False
    try:
        for _name, offset, size in list(sections(elf)):
            found = True
            for payload_at, payload, kind, sm in list(entries(elf, offset, size)):
                label = f"{'ptx' if kind == 1 else 'elf'} sm_{sm}"
                if sm in keep:
                    kept[label] += payload
                else:
                    elf[payload_at : payload_at + payload] = bytes(payload)
                    zeroed[label] += payload
    except (ValueError, struct.error) as e:
        sys.exit(f"prune_nccl: {args.src}: {e}")
    if not found:
        sys.exit(f"prune_nccl: {args.src} has no fatbin section: is it NCCL's library?")
    if not kept:
        sys.exit(f"prune_nccl: {args.src} holds no code for sm {sorted(keep)}: it would not run there")
    if args.dst:
        with open(args.dst, "wb") as out:
            out.write(elf)
    mb = 1024 * 1024
    print("prune_nccl: kept " + ", ".join(f"{k} {v / mb:.1f} MiB" for k, v in sorted(kept.items())))
    print(f"prune_nccl: zeroed {sum(zeroed.values()) / mb:.1f} MiB (" + ", ".join(sorted(zeroed)) + ")")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""fatbin_keep_arch.py LIB ARCH — zero, in place, every payload of LIB's
.nv_fatbin section but the ARCH (e.g. 90) cubins: the CUDA runtime loads the
entry that matches the device and never reads the others, and runs of zeros
compress to nothing. Used by alchemi_pack.sh to make warp-lang's warp.so
(its fatbin holds every architecture from sm_75 to sm_120) fit the GPU
host's carry limit. Prints the bytes zeroed per (kind, arch)."""
import collections
import struct
import subprocess
import sys

FATBIN_MAGIC = 0xBA55ED50  # a fatbin container's header
ELF = 2  # entry kind (1 = PTX)


def main():
    path, keep = sys.argv[1], int(sys.argv[2])
    data = bytearray(open(path, "rb").read())
    off = size = None
    for line in subprocess.check_output(["readelf", "-S", "-W", path], text=True).splitlines():
        if ".nv_fatbin" in line:
            f = line.split("]", 1)[1].split()
            off, size = int(f[3], 16), int(f[4], 16)
    if off is None:
        sys.exit(f"{path}: no .nv_fatbin section")
    zeroed = collections.Counter()
    p, end = off, off + size
    while p < end:
        magic, _ver, hsize, fsize = struct.unpack_from("<IHHQ", data, p)
        if magic != FATBIN_MAGIC:
            p += 8  # containers are 8-byte aligned
            continue
        q, cend = p + hsize, p + hsize + fsize
        while q < cend:
            kind, _v, ehsize, psize = struct.unpack_from("<HHIQ", data, q)
            arch = struct.unpack_from("<I", data, q + 28)[0]
            if not (kind == ELF and arch == keep):
                data[q + ehsize:q + ehsize + psize] = bytes(psize)
                zeroed[(kind, arch)] += psize
            q += ehsize + psize
        p = cend
    open(path, "wb").write(data)
    for (kind, arch), n in sorted(zeroed.items()):
        print(f"{path}: zeroed {'ELF' if kind == ELF else 'PTX'} sm_{arch}: {n / 1e6:.1f} MB")


if __name__ == "__main__":
    main()

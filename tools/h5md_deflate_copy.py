#!/usr/bin/env python3
"""tools/h5md_deflate_copy.py SRC DST — an H5MD file with every
particles/*/position/value rewritten shuffled and deflate-compressed (level
4), one frame a chunk; everything else copied. A fresh file, not SRC with the
dataset replaced: HDF5 keeps the space of a deleted dataset. The compressed
input of tools/bench/bench_run.sh and bench_read_threads.sh."""
import sys

import h5py


def copy(src, dst):
    with h5py.File(src, "r") as s, h5py.File(dst, "w") as d:
        def walk(sg, dg):
            for k, v in sg.attrs.items():
                dg.attrs[k] = v
            for name, obj in sg.items():
                if isinstance(obj, h5py.Group):
                    walk(obj, dg.create_group(name))
                elif obj.name.endswith("position/value"):
                    ds = dg.create_dataset(name, shape=obj.shape, dtype=obj.dtype, chunks=(1,) + obj.shape[1:],
                                           compression="gzip", compression_opts=4, shuffle=True)
                    for i in range(obj.shape[0]):
                        ds[i] = obj[i]
                else:
                    sg.copy(obj, dg, name=name)
        walk(s, d)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    copy(sys.argv[1], sys.argv[2])

#!/usr/bin/python3
"""make_h5md_fixtures.py — writes the small H5MD fixtures of data/h5md/.

Run from anywhere with the Debian python (h5py + numpy):

    /usr/bin/python3 tools/make_h5md_fixtures.py [OUTDIR]

The files are committed; tests/test_h5md.c checks the numbers written here, so
a change to this script needs the matching change there. Every file is a few
KiB. Valid files cover each H5MD box form, open boundaries, float32 positions,
fixed-increment step/time, a LAMMPS `dump h5md` style H5MD 1.0 file and
particle-group selection; the bad_*.h5md files each break one rule and must be
rejected with exit status 3 naming the offending dataset or attribute.

The bad_flip_*.h5md files are not written here: each is the output of
`mdnl convert data/trajectory-3frames.extxyz x.h5` (46,404 bytes, at
9139fc9) with one byte XORed with 0xff (bad_flip_type_size: offset 10884,
the position datatype's size; bad_flip_chunk_count: 10939, the first chunk
dimension; bad_flip_chunk_dim: 10947, the third; bad_flip_species_type:
24975, the species datatype's size), found by the byte-flip sweep of
docs/robustness.md; the unfixed reader overran HDF5's buffers (or, for the
species, ran past the sweep's 20 s limit).

box_td33.h5md has an exact extended-XYZ twin, box_td33.extxyz (positions and
lattice printed with 17 significant digits), so that neighbor lists can be
compared between the two readers.
"""
import os
import sys

import h5py
import numpy as np

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "h5md")
os.makedirs(OUT, exist_ok=True)

VLEN = h5py.string_dtype()


def new_file(name, version=(1, 1), creator="make_h5md_fixtures.py"):
    f = h5py.File(os.path.join(OUT, name), "w", track_order=True)
    h = f.create_group("h5md")
    h.attrs["version"] = np.array(version, dtype=np.int32)
    h.create_group("author").attrs["name"] = "mdnl fixtures"
    c = h.create_group("creator")
    c.attrs["name"] = creator
    c.attrs["version"] = "1"
    return f


def boundary_fixed(*names):
    # Fixed-length strings, as ch5md (LAMMPS) writes them.
    return np.array([n.encode() for n in names], dtype="S8")


def add_box(g, boundary, edges=None, vlen=False, dimension=3):
    b = g.create_group("box")
    b.attrs["dimension"] = np.int32(dimension)
    if vlen:
        b.attrs.create("boundary", list(boundary), dtype=VLEN)
    else:
        b.attrs["boundary"] = boundary_fixed(*boundary)
    if edges is not None:
        b.create_dataset("edges", data=edges)
    return b


def add_td(g, name, value, step, time=None, value_dtype=None):
    """A time-dependent H5MD element: name/{value,step[,time]}."""
    e = g.create_group(name)
    e.create_dataset("value", data=np.asarray(value, dtype=value_dtype) if value_dtype else value)
    e.create_dataset("step", data=step)
    if time is not None:
        e.create_dataset("time", data=time)
    return e


rng = np.random.default_rng(20240611)

# --- valid files -------------------------------------------------------------

# box_fixed3: orthorhombic fixed edges [3], fixed-length boundary strings,
# species [N] int32 without a name table (symbols are the numbers as text).
T, N = 3, 4
pos3 = np.array([[[0.5, 0.5, 0.5], [1.5, 0.5, 0.5], [0.5, 2.0, 0.5], [9.5, 9.0, 8.0]]]) + np.arange(T)[:, None, None] * 0.25
with new_file("box_fixed3.h5md") as f:
    g = f.create_group("particles/all")
    add_box(g, ["periodic"] * 3, edges=np.array([10.0, 11.0, 12.0]))
    add_td(g, "position", pos3, np.array([0, 10, 20], dtype=np.int64), np.array([0.0, 0.5, 1.0]))
    g.create_dataset("species", data=np.array([1, 2, 1, 7], dtype=np.int32))

# box_fixed33: triclinic fixed edges [3][3], variable-length boundary strings,
# fixed-increment step and time (scalars with an offset attribute, H5MD 1.1).
with new_file("box_fixed33.h5md") as f:
    g = f.create_group("particles/all")
    H = np.array([[10.0, 0.0, 0.0], [2.0, 9.0, 0.0], [1.0, 1.5, 8.0]])
    add_box(g, ["periodic"] * 3, edges=H, vlen=True)
    p = g.create_group("position")
    p.create_dataset("value", data=pos3)
    s = p.create_dataset("step", data=np.int64(5))
    s.attrs["offset"] = np.int64(100)
    t = p.create_dataset("time", data=np.float64(0.25))
    t.attrs["offset"] = np.float64(1.0)
    g.create_dataset("species", data=np.array([1, 1, 1, 1], dtype=np.int32))

# box_td3: time-dependent edges [T][3] sampled every other frame (frames use
# the latest box sample whose step is not after theirs), float32 positions,
# boundary periodic/periodic/none, the only particle group named "atoms",
# fixed-length string species.
T4 = 4
posf = (rng.random((T4, 5, 3)) * 8.0).astype(np.float32)
with new_file("box_td3.h5md") as f:
    g = f.create_group("particles/atoms")
    b = add_box(g, ["periodic", "periodic", "none"])
    add_td(b, "edges", np.array([[8.0, 9.0, 10.0], [8.5, 9.5, 10.5]]), np.array([0, 20], dtype=np.int64),
           np.array([0.0, 2.0]))
    add_td(g, "position", posf, np.array([0, 10, 20, 30], dtype=np.int64), np.array([0.0, 1.0, 2.0, 3.0]))
    g.create_dataset("species", data=np.array([b"O", b"H", b"H", b"O", b"H"], dtype="S2"))

# box_td33: time-dependent triclinic edges [T][3][3] sharing step/time with
# position through hard links, species [N] int32 with mdnl's `names`
# attribute (code k is names[k]). Twin: box_td33.extxyz.
T33, N33 = 4, 24
H0 = np.array([[7.0, 0.0, 0.0], [1.0, 6.5, 0.0], [0.5, 0.8, 6.8]])
edges33 = np.stack([H0 * (1.0 + 0.01 * k) for k in range(T33)])
frac = rng.random((T33, N33, 3))
pos33 = np.einsum("tni,tij->tnj", frac, edges33)
pos33[:, 0, :] += np.array([-0.3, 7.1, 0.2])  # one atom outside the cell: readers must not wrap
codes33 = np.array([0, 1] * (N33 // 2), dtype=np.int32)
names33 = ["C", "H"]
step33 = np.array([0, 100, 200, 300], dtype=np.int64)
time33 = step33 * 0.002
with new_file("box_td33.h5md") as f:
    g = f.create_group("particles/all")
    b = add_box(g, ["periodic"] * 3)
    p = add_td(g, "position", pos33, step33, time33)
    e = b.create_group("edges")
    e.create_dataset("value", data=edges33)
    e["step"] = p["step"]
    e["time"] = p["time"]
    sp = g.create_dataset("species", data=codes33)
    sp.attrs["names"] = np.array([n.encode() for n in names33], dtype="S16")
with open(os.path.join(OUT, "box_td33.extxyz"), "w") as x:
    for k in range(T33):
        lat = " ".join("%.17g" % v for v in edges33[k].ravel())
        x.write("%d\n" % N33)
        x.write('Lattice="%s" Properties=species:S:1:pos:R:3 pbc="T T T" step=%d time=%.17g\n'
                % (lat, step33[k], time33[k]))
        for i in range(N33):
            x.write("%s %.17g %.17g %.17g\n" % ((names33[codes33[i]],) + tuple(pos33[k, i])))

# open_none: boundary none on every axis and no edges: an open frame.
with new_file("open_none.h5md") as f:
    g = f.create_group("particles/all")
    add_box(g, ["none"] * 3)
    add_td(g, "position", pos3[:2], np.array([0, 1], dtype=np.int64), np.array([0.0, 0.1]))

# notime: position/step only, no time dataset (allowed since H5MD 1.1).
with new_file("notime.h5md") as f:
    g = f.create_group("particles/all")
    add_box(g, ["periodic"] * 3, edges=np.array([10.0, 10.0, 10.0]))
    add_td(g, "position", pos3[:2], np.array([7, 9], dtype=np.int64))

# lammps_h5md10: the shape of LAMMPS `dump h5md` output (H5MD 1.0 through
# ch5md): no units, double positions, int32 step, time-dependent species
# [T][N] and time-dependent edges [T][3], each element with its own step/time.
TL, NL = 3, 5
posl = rng.random((TL, NL, 3)) * 6.0
stepl = np.array([0, 50, 100], dtype=np.int32)
timel = stepl * 0.005
with new_file("lammps_h5md10.h5md", version=(1, 0), creator="lammps") as f:
    g = f.create_group("particles/all")
    b = add_box(g, ["periodic"] * 3)
    add_td(b, "edges", np.tile([6.0, 6.5, 7.0], (TL, 1)), stepl, timel)
    add_td(g, "position", posl, stepl, timel)
    add_td(g, "species", np.tile(np.array([1, 1, 2, 2, 1], dtype=np.int32), (TL, 1)), stepl, timel)
    f.create_group("parameters")

# two_groups: "all" and "solvent"; the default is "all".
with new_file("two_groups.h5md") as f:
    for name, n in (("solvent", 2), ("all", 4)):
        g = f.create_group("particles/" + name)
        add_box(g, ["periodic"] * 3, edges=np.array([10.0, 10.0, 10.0]))
        add_td(g, "position", pos3[:, :n], np.array([0, 1, 2], dtype=np.int64), np.array([0.0, 1.0, 2.0]))

# two_groups_noall: "left" and "right" and no "all": no default group.
with new_file("two_groups_noall.h5md") as f:
    for name, n in (("left", 2), ("right", 3)):
        g = f.create_group("particles/" + name)
        add_box(g, ["periodic"] * 3, edges=np.array([10.0, 10.0, 10.0]))
        add_td(g, "position", pos3[:, :n], np.array([0, 1, 2], dtype=np.int64))


# --- malformed files: each breaks one rule ------------------------------------

def base(name, *, value=None, step=None, time=None, box=True, boundary=("periodic",) * 3,
         edges=np.array([10.0, 10.0, 10.0]), species=None, dimension=3, position=True):
    f = new_file(name)
    g = f.create_group("particles/all")
    if box:
        b = g.create_group("box")
        if dimension is not None:
            b.attrs["dimension"] = np.int32(dimension)
        if boundary is not None:
            b.attrs["boundary"] = boundary_fixed(*boundary)
        if edges is not None:
            b.create_dataset("edges", data=edges)
    if position:
        p = g.create_group("position")
        p.create_dataset("value", data=pos3 if value is None else value)
        p.create_dataset("step", data=np.array([0, 1, 2], dtype=np.int64) if step is None else step)
        p.create_dataset("time", data=np.array([0.0, 1.0, 2.0]) if time is None else time)
    if species is not None:
        g.create_dataset("species", data=species)
    return f


base("bad_rank.h5md", value=pos3[:, :, 0]).close()
base("bad_shape.h5md", value=pos3[:, :, :2]).close()
base("bad_position_missing.h5md", position=False).close()
base("bad_boundary_missing.h5md", boundary=None).close()
base("bad_boundary_value.h5md", boundary=("periodic", "periodik", "none")).close()
base("bad_dimension.h5md", dimension=2).close()
base("bad_box_missing.h5md", box=False).close()
base("bad_edges_shape.h5md", edges=np.array([10.0, 10.0])).close()
base("bad_zero_volume.h5md", edges=np.array([10.0, 0.0, 10.0])).close()
base("bad_t_mismatch.h5md", step=np.array([0, 1], dtype=np.int64)).close()
base("bad_n_species.h5md", species=np.array([1, 1, 1, 1, 1], dtype=np.int32)).close()
nanpos = pos3.copy()
nanpos[1, 2, 1] = np.nan
base("bad_nan.h5md", value=nanpos).close()
infpos = pos3.copy()
infpos[2, 0, 0] = np.inf
base("bad_inf.h5md", value=infpos).close()
base("bad_step_string.h5md", step=np.array([b"0", b"1", b"2"], dtype="S4")).close()
base("bad_value_string.h5md", value=np.full((3, 4, 3), b"x", dtype="S1")).close()
with base("bad_edges_td_t_mismatch.h5md", edges=None) as f:
    add_td(f["particles/all/box"], "edges", np.tile([10.0, 10.0, 10.0], (3, 1)), np.array([0, 1], dtype=np.int64))
with base("bad_species_td_shape.h5md") as f:
    add_td(f["particles/all"], "species", np.ones((3, 5), dtype=np.int32), np.array([0, 1, 2], dtype=np.int64))
with base("bad_edges_td_late.h5md", edges=None) as f:
    # The first box sample comes after the first position frame.
    add_td(f["particles/all/box"], "edges", np.tile([10.0, 10.0, 10.0], (2, 1)), np.array([1, 2], dtype=np.int64))
with base("bad_step_offset_array.h5md", step=np.int64(10)) as f:
    # An offset attribute must be one number: H5Aread writes every element,
    # and 600 of them overran the reader's struct (found by tests/fuzz/fuzz_h5md).
    f["particles/all/position/step"].attrs["offset"] = np.arange(600, dtype=np.int64)
with new_file("bad_species_unwritten.h5md") as f:
    # 200,000 atoms of compressed zeros, and 4000-byte species strings declared
    # but never written: reading a species row would allocate 800 MB that the
    # file does not hold.
    g = f.create_group("particles/all")
    add_box(g, ["none"] * 3)
    p = g.create_group("position")
    p.create_dataset("value", data=np.zeros((1, 200000, 3)), compression="gzip", chunks=(1, 200000, 3))
    p.create_dataset("step", data=np.array([0], dtype=np.int64))
    g.create_dataset("species", shape=(200000,), dtype="S4000", chunks=(1000,))
with base("bad_step_overflow.h5md", step=np.int64(2)) as f:
    # offset + frame x step past INT64_MAX from frame 1 on (signed overflow
    # under UBSan, found by tests/fuzz/fuzz_h5md).
    f["particles/all/position/step"].attrs["offset"] = np.int64(2**63 - 1)

# --- files that point outside themselves, or declare what they do not hold --
# (issue 54). mdnl reads the file it is given and nothing else: each of these
# must be refused (exit 3) before a byte of another file is opened or read.
with base("bad_external_link.h5md", position=False) as f:
    # The position group is an external link into another fixture, a valid
    # file: following it would read that file's frames.
    f["particles/all/position"] = h5py.ExternalLink("box_fixed3.h5md", "/particles/all/position")
with base("bad_external_link_elsewhere.h5md") as f:
    # An external link outside the particle group, to a device: refused too
    # (the file is refused as a whole, whatever the reader would touch).
    f["observables/zero"] = h5py.ExternalLink("/dev/zero", "/x")
with open(os.path.join(OUT, "bad_external_storage.raw"), "wb") as raw:
    pos3.astype("<f8").tofile(raw)
with base("bad_external_storage.h5md", position=False) as f:
    # position/value keeps its bytes in another file (HDF5 external raw
    # storage): mdnl would read that file as coordinates (/etc/passwd in the
    # issue). The raw file beside it holds valid doubles, so only the refusal
    # can make the read fail.
    p = f.create_group("particles/all/position")
    p.create_dataset("value", shape=pos3.shape, dtype="<f8",
                     external=[("bad_external_storage.raw", 0, pos3.nbytes)])
    p.create_dataset("step", data=np.array([0, 1, 2], dtype=np.int64))
with base("bad_vds_self.h5md", position=False) as f:
    # A virtual dataset whose source is itself in this same file ("."): HDF5
    # recursed without end (SIGSEGV) when it was read.
    p = f.create_group("particles/all/position")
    layout = h5py.VirtualLayout(shape=(3, 4, 3), dtype="<f8")
    layout[:] = h5py.VirtualSource(".", "/particles/all/position/value", shape=(3, 4, 3))
    p.create_virtual_dataset("value", layout)
    p.create_dataset("step", data=np.array([0, 1, 2], dtype=np.int64))
with base("bad_declared_frames.h5md", position=False) as f:
    # 10^12 frames declared (extendible, chunked by frame), one chunk
    # written: neighbors/rdf/run looped over fill values for ever.
    p = f.create_group("particles/all/position")
    v = p.create_dataset("value", shape=(10**12, 4, 3), maxshape=(None, 4, 3), dtype="<f8", chunks=(1, 4, 3))
    v[0] = pos3[0]
    p.create_dataset("step", data=np.int64(1))
with base("bad_declared_contiguous.h5md", position=False) as f:
    # 10^9 frames of contiguous storage never allocated (a few KB on disk).
    p = f.create_group("particles/all/position")
    p.create_dataset("value", shape=(10**9, 4, 3), dtype="<f8")
    p.create_dataset("step", data=np.int64(1))
with base("bad_filter_unknown.h5md", position=False) as f:
    # A filter this HDF5 cannot decode (32001 is Blosc's id, not built in).
    p = f.create_group("particles/all/position")
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((1, 4, 3))
    dcpl.set_filter(32001, h5py.h5z.FLAG_OPTIONAL, ())
    space = h5py.h5s.create_simple((3, 4, 3))
    h5py.h5d.create(p.id, b"value", h5py.h5t.IEEE_F64LE, space, dcpl=dcpl)
    p.create_dataset("step", data=np.array([0, 1, 2], dtype=np.int64))
with new_file("bad_zeros_2m_gzip.h5md") as f:
    # 2,000,000 atoms all at the origin of a periodic 100 A box: 48 MB of
    # zeros in a 62 KB file. Every atom is in one cell: every pair is a candidate
    # (4e12); rdf and energy ran for ever, neighbors grew to 1.7 GB before
    # exit 4. The work guard must refuse it from the cells' occupancy.
    g = f.create_group("particles/all")
    add_box(g, ["periodic"] * 3, edges=np.array([100.0, 100.0, 100.0]))
    p = g.create_group("position")
    p.create_dataset("value", data=np.zeros((1, 2000000, 3)), compression="gzip", compression_opts=9,
                     chunks=(1, 2000000, 3))
    p.create_dataset("step", data=np.array([0], dtype=np.int64))
# --- positions read from the file's bytes in worker threads (issue 59) --
# Seven frames of 40 atoms stored every way the parallel reader decodes
# (io/h5_raw.c) and one it leaves to H5Dread (big-endian); all hold the
# same coordinates (float32 rounded), so each reads to the same frames with
# any --threads. The bad_par_* files break one chunk of one frame.
import zlib  # noqa: E402

par = (np.random.default_rng(59).random((7, 40, 3)) * 20.0 - 5.0)


def par_file(name, data, **kw):
    f = new_file(name)
    g = f.create_group("particles/all")
    add_box(g, ["periodic"] * 3, edges=np.array([20.0, 21.0, 22.0]))
    p = g.create_group("position")
    v = p.create_dataset("value", data=data, **kw)
    p.create_dataset("step", data=np.arange(7, dtype=np.int64) * 10)
    p.create_dataset("time", data=np.arange(7, dtype=np.float64) * 0.5)
    return f, v


def shuffled_deflate(rows, level=4):
    b = np.ascontiguousarray(rows, dtype="<f8").tobytes()
    sh = np.frombuffer(b, dtype=np.uint8).reshape(-1, 8).T.tobytes()
    return zlib.compress(sh, level)


par_file("par_chunked.h5md", par, chunks=(1, 40, 3))[0].close()
par_file("par_contiguous.h5md", par)[0].close()
# a partial last chunk in time (7 = 3 + 3 + 1)
par_file("par_deflate.h5md", par, chunks=(3, 40, 3), compression="gzip", shuffle=True)[0].close()
# chunks split across atoms (40 = 16 + 16 + 8) and axes, with checksums
par_file("par_fletcher_f32.h5md", par.astype("<f4"), chunks=(2, 16, 1), compression="gzip",
         fletcher32=True)[0].close()
par_file("par_bigendian.h5md", par.astype(">f8"), chunks=(1, 40, 3), compression="gzip", shuffle=True)[0].close()
# A broken chunk of frame K (chunks of one frame, shuffle + deflate): a
# deflate stream cut short at frame 0, bytes that are no deflate stream at
# frame 3, a stream of one frame less 8 bytes at frame 6 (it inflates to
# the wrong size); stored with write_direct_chunk, as HDF5 would store them.
for k, stored in ((0, shuffled_deflate(par[0])[:100]),
                  (3, bytes((i * 37 + 11) % 256 for i in range(600))),
                  (6, zlib.compress(np.frombuffer(np.ascontiguousarray(par[6], dtype="<f8").tobytes()[8:],
                                                  dtype=np.uint8).tobytes()))):
    f, v = par_file("bad_par_deflate_frame%d.h5md" % k, par, chunks=(1, 40, 3), compression="gzip", shuffle=True)
    v.id.write_direct_chunk((k, 0, 0), stored, 0)
    f.close()
# A data byte of frame 5 flipped under a Fletcher-32 checksum (no deflate:
# the flip reaches the data).
f, v = par_file("bad_par_fletcher_frame5.h5md", par, chunks=(1, 40, 3), fletcher32=True)
raw = bytearray(np.ascontiguousarray(par[5], dtype="<f8").tobytes())
raw += v.id.read_direct_chunk((5, 0, 0))[1][-4:]
raw[17] ^= 0x40
v.id.write_direct_chunk((5, 0, 0), bytes(raw), 0)
f.close()
nan_par = par.copy()
nan_par[4, 33, 2] = np.nan
par_file("bad_par_nan_frame4.h5md", nan_par, chunks=(3, 40, 3), compression="gzip", shuffle=True)[0].close()

with new_file("bad_no_particles.h5md") as f:
    f.create_group("observables")
with open(os.path.join(OUT, "bad_not_hdf5.h5md"), "w") as f:
    f.write("3\nnot an HDF5 file\n")

total = sum(os.path.getsize(os.path.join(OUT, n)) for n in os.listdir(OUT))
print("wrote %d files, %d bytes, to %s" % (len(os.listdir(OUT)), total, OUT))

#!/usr/bin/env python3
"""png_ink.py PNG - prints "width height ink colors" for an 8-bit RGB(A)
PNG: ink is the fraction of pixels that are not (near) white, colors the
number of distinct colours. Enough to tell a rendered page of plots from a
blank one without an image library."""
import struct, sys, zlib

data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
i, idat = 8, b""
while i < len(data):
    n, kind = struct.unpack(">I4s", data[i:i + 8])
    body = data[i + 8:i + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
    elif kind == b"IDAT":
        idat += body
    i += 12 + n
assert depth == 8 and ctype in (2, 6), "only 8-bit RGB/RGBA"
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
prev, ink, colors = bytearray(stride), 0, set()
for y in range(h):
    f, row = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for x in range(stride):
        a = row[x - bpp] if x >= bpp else 0
        b = prev[x]
        c = prev[x - bpp] if x >= bpp else 0
        if f == 1: row[x] = (row[x] + a) & 255
        elif f == 2: row[x] = (row[x] + b) & 255
        elif f == 3: row[x] = (row[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            row[x] = (row[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    if y % 4 == 0:   # a sample of rows is plenty
        for x in range(0, stride, bpp * 2):
            px = bytes(row[x:x + 3])
            colors.add(px)
            if min(px) < 235:
                ink += 1
    prev = row
samples = ((h + 3) // 4) * ((w + 1) // 2)
print(w, h, "%.4f" % (ink / samples), len(colors))

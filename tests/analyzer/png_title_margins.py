#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Whether a plot's title fits its canvas: in the band above the plot (the top TOP pixels), the
leftmost and rightmost columns hold only the background colour. A clipped title runs into the
edge. Reads 8-bit RGB/RGBA/grey non-interlaced PNGs (what gnuplot's png terminals write) with the
standard library only.  Usage: png_title_margins.py FILE.png [TOP]"""
import struct
import sys
import zlib


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path}: not a PNG")
    pos, idat, palette = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            palette = [body[i:i + 3] for i in range(0, len(body), 3)]
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    if depth != 8 or interlace:
        raise SystemExit(f"{path}: depth {depth}, interlace {interlace}: not read here")
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[colour]
    raw, stride, rows, prev = zlib.decompress(idat), width * channels, [], bytearray(width * channels)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line

    def pixel(x, y):
        px = bytes(rows[y][x * channels:(x + 1) * channels])
        if colour == 3:
            return bytes(palette[px[0]])
        return px[:3] if channels >= 3 else px[:1] * 3

    return width, height, pixel


def main():
    path = sys.argv[1]
    width, height, pixel = read_png(path)
    top = int(sys.argv[2]) if len(sys.argv) > 2 else height // 10
    background = pixel(width // 2, height - 1)
    for x in (0, 1, width - 2, width - 1):
        for y in range(top):
            if pixel(x, y) != background:
                print(f"FAIL: {path}: the title reaches the {'left' if x < 2 else 'right'} edge "
                      f"(pixel {x},{y} is {pixel(x, y).hex()}, the background {background.hex()})")
                return 1
    print(f"OK: {path}: the title band's edges are background ({width}x{height}, top {top} px)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Probe: can nvJPEG's hardware engine decode the lesson's JPEGs on this node? (issue 36)"""
import ctypes
import glob
import io
import json
import os
import sys
import time

import torch
import torchvision
from PIL import Image
from torchvision.io import ImageReadMode, decode_jpeg

sys.path.insert(0, os.getcwd())
from small_files.generate import image_bytes  # noqa: E402

libs = sorted(glob.glob(os.path.join(os.path.dirname(torchvision.__file__), "..", "torchvision.libs", "libnvjpeg*")))
print("torch", torch.__version__, "torchvision", torchvision.__version__, torch.cuda.get_device_name(0), libs)
nv = ctypes.CDLL(libs[0])
maj, mnr = ctypes.c_int(), ctypes.c_int()
nv.nvjpegGetProperty(0, ctypes.byref(maj)); nv.nvjpegGetProperty(1, ctypes.byref(mnr))
print("nvjpeg", maj.value, mnr.value)
torch.zeros(1, device="cuda")

out = {}
for backend, name in [(3, "HARDWARE"), (5, "HARDWARE_DEVICE"), (2, "GPU_HYBRID"), (0, "DEFAULT")]:
    h = ctypes.c_void_p()
    st = nv.nvjpegCreateEx(backend, None, None, 0, ctypes.byref(h))
    info = None
    if st == 0 and backend in (3, 5):
        e, c = ctypes.c_uint(), ctypes.c_uint()
        s2 = nv.nvjpegGetHardwareDecoderInfo(h, ctypes.byref(e), ctypes.byref(c))
        info = (s2, e.value, c.value)
    print("create", name, "status", st, "hw info", info)
    out[name] = (st, h)


def variant(q=90, sub=None, prog=False, size=160, idx=0):
    if sub is None and not prog and size == 160 and q == 90:
        return image_bytes(0, idx, idx % 10, 160)
    im = Image.open(io.BytesIO(image_bytes(0, idx, idx % 10, size)))
    b = io.BytesIO()
    kw = {"quality": q, "progressive": prog}
    if sub is not None:
        kw["subsampling"] = sub
    im.save(b, format="JPEG", **kw)
    return b.getvalue()


st, hw = out["HARDWARE"]
if st == 0:
    stream = ctypes.c_void_p()
    nv.nvjpegJpegStreamCreate(hw, ctypes.byref(stream))
    for label, kw in [("lesson", {}), ("444", {"sub": 0}), ("422", {"sub": 1}), ("420", {"sub": 2}),
                      ("progressive", {"prog": True}), ("q75", {"q": 75}), ("256px", {"size": 256}),
                      ("512px", {"size": 512})]:
        data = variant(**kw)
        s1 = nv.nvjpegJpegStreamParseHeader(hw, data, ctypes.c_size_t(len(data)), stream)
        sup = ctypes.c_int(-1)
        s2 = nv.nvjpegDecodeBatchedSupported(hw, stream, ctypes.byref(sup))
        print("supported?", label, len(data), "parse", s1, "query", s2, "isSupported", sup.value, "(0 = yes)")

    class Img(ctypes.Structure):
        _fields_ = [("channel", ctypes.c_void_p * 4), ("pitch", ctypes.c_size_t * 4)]

    state = ctypes.c_void_p()
    print("state", nv.nvjpegJpegStateCreate(hw, ctypes.byref(state)))
    n = 256
    jpegs = [variant(idx=i) for i in range(n)]
    joined = ctypes.create_string_buffer(b"".join(jpegs))
    base = ctypes.addressof(joined)
    offs, o = [], 0
    for j in jpegs:
        offs.append(o)
        o += len(j)
    ptrs = (ctypes.c_void_p * n)(*[base + x for x in offs])
    lens = (ctypes.c_size_t * n)(*[len(j) for j in jpegs])
    outt = torch.empty(n, 3, 160, 160, dtype=torch.uint8, device="cuda")
    imgs = (Img * n)()
    for i in range(n):
        for c in range(3):
            imgs[i].channel[c] = outt[i, c].data_ptr()
            imgs[i].pitch[c] = 160
    cs = torch.cuda.current_stream().cuda_stream
    print("init", nv.nvjpegDecodeBatchedInitialize(hw, state, n, 1, 3))

    def hw_decode():
        return nv.nvjpegDecodeBatched(hw, state, ptrs, lens, imgs, ctypes.c_void_p(cs))

    print("decode status", hw_decode()); torch.cuda.synchronize()
    ref = torch.stack(decode_jpeg([torch.frombuffer(bytearray(j), dtype=torch.uint8) for j in jpegs], mode=ImageReadMode.RGB))
    print("max abs diff vs CPU libjpeg", (outt.cpu().int() - ref.int()).abs().max().item(),
          "mean", (outt.cpu().float() - ref.float()).abs().mean().item())
    for rep in range(3):
        t = time.perf_counter()
        for _ in range(40):
            hw_decode()
        torch.cuda.synchronize()
        print("hw batched images/s", round(40 * n / (time.perf_counter() - t)))
    tv_in = [torch.frombuffer(bytearray(j), dtype=torch.uint8) for j in jpegs]
    decode_jpeg(tv_in, mode=ImageReadMode.RGB, device="cuda")
    for rep in range(3):
        t = time.perf_counter()
        for _ in range(40):
            decode_jpeg(tv_in, mode=ImageReadMode.RGB, device="cuda")
        torch.cuda.synchronize()
        print("torchvision images/s", round(40 * n / (time.perf_counter() - t)))
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        decode_jpeg(tv_in, mode=ImageReadMode.RGB, device="cuda"); torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="count", row_limit=12))
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        hw_decode(); torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="count", row_limit=12))
